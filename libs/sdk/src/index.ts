export { ConclaveClient } from './lib/conclave-client';
export type { ConclaveClientOptions, ProposeInput, VoteInput, ListQuery, DecisionsOptions } from './lib/conclave-client';
export { ConclaveError, ConclaveUnavailableError } from './lib/conclave-error';
