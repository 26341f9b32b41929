// Cross-service end-to-end tests: real services booted against the real NATS server.
module.exports = {
  displayName: 'e2e',
  preset: '../jest.preset.js',
  testMatch: ['<rootDir>/**/*.e2e.spec.ts'],
  testTimeout: 60_000,
  coverageDirectory: '../coverage/test',
};
