export { ConclaveClient } from './lib/conclave-client';
export type {
  ConclaveClientOptions,
  ProposeInput,
  DeliberationInput,
  VoteInput,
  ListQuery,
  DecisionsOptions,
  EscalationQuery,
  EscalationSummary,
  EscalationView,
} from './lib/conclave-client';
export { ConclaveError, ConclaveUnavailableError } from './lib/conclave-error';
export { bindFeed, feedConsumerConfig, FeedError, provisionFeed, withJetStreamApiPrefix } from './lib/feeds';
export type { FeedErrorCode, FeedProvision, ProvisionedFeed } from './lib/feeds';
export { CouncilMember, CouncilClient, CouncilRequestError } from './lib/council-member';
export type {
  CouncilTask,
  CouncilTaskContext,
  CouncilTaskHandler,
  CouncilMemberOptions,
  CouncilVerdict,
  CouncilDecisionMessage,
  CouncilClientOptions,
} from './lib/council-member';
export { ed25519Signer, generateParticipantKeys, jwtSigner, signPayload } from './lib/signing';
export type { ParticipantKeyPair, PrivateKeyInput, SignerOptions } from './lib/signing';
