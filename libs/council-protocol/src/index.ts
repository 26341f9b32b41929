// Public surface of @conclave/council-protocol: the pure Council library (council:L0 to L3).
export * from './lib/errors';
export * from './lib/contracts';
export type { Json } from './lib/validation';
export { clone, stableJson } from './lib/validation';
export * from './lib/goal-contract';
export * from './lib/member-descriptor';
export * from './lib/candidate-artifact';
export * from './lib/review-artifact';
export * from './lib/revision-artifact';
export * from './lib/conflict-map';
export * from './lib/frame-check';
export * from './lib/decision-record';
export * from './lib/policy';
export * from './lib/events';
export * from './lib/state';
export * from './lib/seeded-shuffle';
export * from './lib/run-queries';
export * from './lib/independent-proposal';
export * from './lib/review-and-anonymity';
export * from './lib/targeted-revision';
export * from './lib/frame-challenge';
export * from './lib/chair-and-synthesis';
export * from './lib/convergence-and-termination';
export * from './lib/failure-and-degraded-operation';
export * from './lib/controller';
export * from './lib/decide';
export * from './lib/run-record';
export * from './lib/single-agent-council';
export * from './lib/run-aggregation';
// The member API: JSON Schemas, answer validation and stamping, cancel notices.
export * from './lib/member-schemas';
export * from './lib/member-answers';
export * from './lib/run-record-schema';
// Evaluation (council:L4 and L5, spec 14 to 16): pure; the controller, policy and service use them.
export * from './lib/evaluation/ballots';
export * from './lib/evaluation/choice-models';
export * from './lib/evaluation/aggregation';
export * from './lib/evaluation/test-results';
export * from './lib/evaluation/outcomes';
export * from './lib/evaluation/capability';
export * from './lib/evaluation/chair-selection';
export * from './lib/evaluation/concentration';
export * from './lib/evaluation/calibration';
export * from './lib/evaluation/replies';
// The bridge from a Council decision to ACP entries (an extension).
export * from './lib/acp-bridge';
// What the council service does about ACP: start runs, post decisions back, take value choices.
export * from './lib/acp-reactions';
