// End-to-end tests boot real services against a real NATS server: give them time. (In a
// multi-project Jest run a project's `testTimeout` is ignored; this is per project.)
jest.setTimeout(90_000);
