// Cross-service end-to-end tests: real services booted against the real NATS server.
module.exports = {
  displayName: 'e2e',
  preset: '../jest.preset.js',
  testMatch: ['<rootDir>/**/*.e2e.spec.ts'],
  setupFilesAfterEnv: ['<rootDir>/support/jest-setup.ts'],
  coverageDirectory: '../coverage/test',
};
