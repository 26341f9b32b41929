/**
 * `@conclave/event-log/testing`: views of a log for tests of concurrent writers. Not part of the
 * log's port; the contract suite (testing/*.contract.ts) is imported by spec files directly, as
 * it needs Jest globals.
 */
export { overTheNetwork, type NetworkViewOptions } from './testing/network-view';
