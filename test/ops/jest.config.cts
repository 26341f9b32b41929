// The operations tests (`npm run test:ops`): the container images and docker-compose.yml, run for
// real with a container engine. Minutes long, so not part of `npm test`: this config belongs to no
// Nx project, and the e2e project's testMatch leaves these files out.
module.exports = {
  displayName: 'ops',
  preset: '../../jest.preset.js',
  testMatch: ['<rootDir>/**/*.ops.spec.ts'],
  testTimeout: 300_000,
};
