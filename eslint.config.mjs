import nx from '@nx/eslint-plugin';

// Architecture is enforced, not suggested (STYLE.md, "nx-examples as a warning"):
//   type:protocol  pure domain libraries: depend only on other protocol libraries
//   type:infra     event log, messaging: protocol + infra
//   type:sdk       client SDK: protocol + infra
//   type:service   NestJS apps: protocol + infra
//   type:cli       command-line tool: protocol + infra + sdk
//   type:test      cross-service end-to-end tests and benchmarks: anything
export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  {
    ignores: ['**/dist', '**/out-tsc', '**/node_modules', '.data/**'],
  },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.js', '**/*.jsx'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allow: ['^.*/eslint(\\.base)?\\.config\\.[cm]?[jt]s$'],
          depConstraints: [
            { sourceTag: 'type:protocol', onlyDependOnLibsWithTags: ['type:protocol'] },
            { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:protocol', 'type:infra'] },
            { sourceTag: 'type:sdk', onlyDependOnLibsWithTags: ['type:protocol', 'type:infra'] },
            { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:protocol', 'type:infra'] },
            { sourceTag: 'type:cli', onlyDependOnLibsWithTags: ['type:protocol', 'type:infra', 'type:sdk'] },
            { sourceTag: 'type:test', onlyDependOnLibsWithTags: ['*'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
];

// Rules for the pure protocol libraries: no framework, no I/O, no clock, no randomness,
// no environment (DESIGN.md section 2). Imported by libs/*-protocol/eslint.config.mjs.
export const pureLibraryRules = {
  files: ['**/*.ts'],
  ignores: ['**/*.spec.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['@nestjs/*', 'nats', '@eventstore/*', 'rxjs', 'pino', 'prom-client'],
            message: 'Protocol libraries are pure: no framework or I/O.',
          },
          {
            group: ['fs', 'fs/*', 'net', 'http', 'https', 'child_process', 'crypto', 'os', 'node:*', 'ulid'],
            message: 'Protocol libraries are pure: no Node I/O, clock, randomness or id generation.',
          },
          {
            group: ['@conclave/event-log', '@conclave/messaging', '@conclave/sdk'],
            message: 'Protocol libraries depend on nothing but protocol libraries.',
          },
        ],
      },
    ],
    'no-restricted-globals': [
      'error',
      { name: 'process', message: 'Pure libraries never read the environment.' },
      { name: 'setTimeout', message: 'Pure libraries never schedule.' },
      { name: 'setInterval', message: 'Pure libraries never schedule.' },
    ],
    'no-restricted-properties': [
      'error',
      { object: 'Date', property: 'now', message: 'Time is an input (a command field or an injected clock).' },
      { object: 'Math', property: 'random', message: 'Randomness is an input.' },
      { object: 'crypto', property: 'randomUUID', message: 'Ids are generated at the edge.' },
    ],
    'no-restricted-syntax': [
      'error',
      { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'new Date() reads the clock: time is an input.' },
    ],
  },
};
