import { connect, NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { loadConfig } from '../config';
import { AuthenticatedServiceConfig } from './auth-config';
import { NonceStore } from './nonce-store';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

describe('NonceStore.reserve: a public key reserved for one participant on JetStream KV', () => {
  const eventStream = `NONCE_TEST_${ulid()}`;
  const config = loadConfig(AuthenticatedServiceConfig, { CONCLAVE_AUTH_MODE: 'required', CONCLAVE_EVENT_STREAM: eventStream });
  const connections: NatsConnection[] = [];
  const replica = async () => {
    const nc = await connect({ servers: NATS_URL });
    connections.push(nc);
    return new NonceStore(nc, config);
  };

  afterAll(async () => {
    const jsm = await connections[0].jetstreamManager();
    await jsm.streams.delete(`KV_${eventStream}_NONCES`).catch(() => undefined);
    for (const nc of connections) await nc.close().catch(() => undefined);
  });

  it('given a key alice reserved, when she reserves it again (a retried command), then yes; when mallory does, then no', async () => {
    const store = await replica();
    const key = `A${ulid()}`;
    expect(await store.reserve(key, 'alice')).toBe(true);
    expect(await store.reserve(key, 'alice')).toBe(true);
    expect(await store.reserve(key, 'mallory')).toBe(false);
  });

  it('given ten replicas, when ten participants reserve one key at the same instant, then exactly one gets it, and only it again', async () => {
    const stores = await Promise.all(Array.from({ length: 10 }, () => replica()));
    const key = `B${ulid()}`;
    const got = await Promise.all(stores.map((s, i) => s.reserve(key, `p${i}`)));
    expect(got.filter(Boolean)).toHaveLength(1);
    const winner = `p${got.indexOf(true)}`;
    const again = await Promise.all(stores.map((s, i) => s.reserve(key, `p${i}`)));
    expect(again.map((g, i) => g === (`p${i}` === winner))).toEqual(Array(10).fill(true));
  });

  it('given a reserved key, a nonce of the same text is still unused: a reservation is not stored under the bare key', async () => {
    const store = await replica();
    const key = `C${ulid()}`;
    expect(await store.reserve(key, 'alice')).toBe(true);
    expect(await store.claim(key)).toBe(true);
  });
});
