// Cross-service end-to-end tests: real services booted against the real NATS server.
module.exports = {
  displayName: 'e2e',
  preset: '../jest.preset.js',
  // support/*.spec.ts: unit tests of the test tooling itself (the invariant checker);
  // docs/*.spec.ts: the docs' citations of tests name tests that exist.
  testMatch: ['<rootDir>/**/*.e2e.spec.ts', '<rootDir>/support/**/*.spec.ts', '<rootDir>/docs/**/*.spec.ts'],
  setupFilesAfterEnv: ['<rootDir>/support/jest-setup.ts'],
  coverageDirectory: '../coverage/test',
};
