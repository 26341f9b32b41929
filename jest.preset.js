const nxPreset = require('@nx/jest/preset').default;

// @swc/jest instead of ts-jest: much faster on 2 cores. Type checking runs once,
// for the whole workspace, in `npm run typecheck` (part of `npm test`).
// decoratorMetadata is required or NestJS DI injects undefined (TOOLCHAIN pitfall 5).
module.exports = {
  ...nxPreset,
  testEnvironment: 'node',
  transform: {
    '^.+\\.[tj]s$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2021',
          keepClassNames: true,
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // jose is ESM-only: Node 20 requires it natively, Jest's module system needs it transformed.
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
};
