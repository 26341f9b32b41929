import baseConfig from '../eslint.config.mjs';

export default [
  ...baseConfig,
  {
    // The end-to-end harness boots the services in this process, through their apps' start
    // functions; nothing else may import an app, and apps import no tests.
    files: ['support/**/*.ts', 'e2e/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': 'off' },
  },
];
