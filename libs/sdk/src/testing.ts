/**
 * `@conclave/sdk/testing`: scripted council members (deterministic answers, fixed delays) for
 * tests, benchmarks and the demo. Not the SDK's public surface: an agent framework plugs in its
 * own `CouncilTaskHandler` (see `CouncilMember`).
 */
export * from './lib/scripted-members';
