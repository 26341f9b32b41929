// Public surface of @conclave/acp-protocol: the pure ACP protocol library (no I/O, no clock).

export { ACP_ERROR_CODES, AcpError, isAcpErrorCode } from './lib/errors';
export type { AcpErrorBody, AcpErrorCode } from './lib/errors';

// contracts: names, enums, streams
export {
  BUILT_IN_QUORUM_POLICY_KINDS,
  DECISION_EVENT_TYPE,
  ENTRY_TYPES,
  ESCALATION_REASONS,
  EVENT_SCHEMA_VERSION,
  HUMAN_OUTCOMES,
  LADDER_ACTIONS,
  LADDER_DEFAULT_OUTCOMES,
  OUTCOMES,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STATUSES,
  PROPOSAL_STREAM_CATEGORY,
  RESPONSE_TYPES,
  TRIGGERS,
  WIRE_SCHEMA_VERSION,
  proposalStream,
} from './lib/contracts';
export type {
  BuiltInQuorumPolicyKind,
  EntryType,
  EscalationReason,
  HumanOutcome,
  LadderAction,
  LadderDefaultOutcome,
  Outcome,
  ProposalCommandType,
  ProposalEventType,
  ProposalStatus,
  ResponseType,
  Trigger,
  WireSchemaVersion,
} from './lib/contracts';

// ids and timestamps (spec 12.1)
export { assertUlid, deriveEventId, isUlid } from './lib/ids';
export { isUtcTimestamp, utcInstant } from './lib/timestamps';

// wire format (spec 12, Appendix B) and the NATS API bodies (DESIGN section 5)
export type {
  ChildOutcome,
  DecisionEvent,
  EscalateRequest,
  EscalationMetadata,
  GetRequest,
  HumanSignOffRecord,
  LineageRequest,
  JsonObject,
  ListRequest,
  Proposal,
  ProposeRequest,
  QuorumPolicySpec,
  RespondRequest,
  ResolveRequest,
  Resolution,
  Response,
} from './lib/wire-format';
export {
  parseDecisionEvent,
  parseEscalateRequest,
  parseGetRequest,
  parseLineageRequest,
  parseListRequest,
  parseProposal,
  parseProposeRequest,
  parseResolution,
  parseResolveRequest,
  parseRespondRequest,
  parseResponse,
  MAX_CAUSES,
  MAX_ELIGIBLE,
  MAX_LINEAGE_DEPTH,
} from './lib/wire-validation';

// links between entries: causal lineage (11.3) and parent/child checks (9.3)
export { checkCauses, checkChildren, childrenToLoad } from './lib/lineage';
export type { EntryLinks, KnownEntries, LineageNode } from './lib/lineage';
export { isSameResponse, isSameSubmission } from './lib/idempotent-retry';

// weighted voting (spec 6), exact decimals (DESIGN section 2)
export type { ExactDecimal } from './lib/exact-decimal';
export { compare as compareExact, decimalFromNumber, toDecimalString, toNumber as exactToNumber } from './lib/exact-decimal';
export { EMPTY_TALLY, addVote, clampFactor, computeWeight, determineOutcome, reportedVotes, tallyVotes } from './lib/weighted-voting';
export type { ComputedWeight, VoteTally, WeightFactors } from './lib/weighted-voting';

// quorum policies (spec 7, 18.1)
export {
  DEFAULT_QUORUM_POLICIES,
  countQuorumPolicy,
  createQuorumPolicyRegistry,
  isQuorumMet,
  quorumPolicyFor,
  unanimousQuorumPolicy,
  weightedQuorumPolicy,
} from './lib/quorum-policies';
export type { QuorumPolicy, QuorumPolicyRegistry } from './lib/quorum-policies';

// timeout and expiration (spec 8, 15.5)
export { expirationOutcome, expiryDeadline, isExpired } from './lib/timeout-and-expiration';
export type { ExpirationResult } from './lib/timeout-and-expiration';

// domains and parent/child proposals (spec 9)
export { childOutcomeOf, isDomain, isWithinDomain, parentOutcome } from './lib/domain-scoped-resolution';
export type { ParentOutcomeDecision } from './lib/domain-scoped-resolution';

// human escalation (spec 10)
export { conditionHolds, matchEscalationPolicy, parseEscalationPolicies } from './lib/human-escalation';
export type { EscalationPolicyRule, PolicyCondition } from './lib/human-escalation';
export { dueLadderSteps, ladderStepDueAt, parseEscalationRoutes, routeFor, routingFor } from './lib/escalation-ladder';
export type { EscalationRoute, EscalationRouting, LadderStep } from './lib/escalation-ladder';
export { parseSignOffRule, signOffDecision } from './lib/human-sign-off';
export type { HumanSignOff, SignOffDecision, SignOffRule } from './lib/human-sign-off';
export { canonicalJson } from './lib/canonical-json';

// the decider
export type {
  AdvanceEscalationLadder,
  CommandMetadata,
  RouteEscalation,
  EscalateProposal,
  ExpireProposal,
  ProposalCommand,
  RecordChildOutcome,
  RecordResponse,
  ResolveEscalation,
  ResolveProposal,
  SubmitProposal,
} from './lib/proposal.commands';
export { isEscalationDeskEvent, isTerminalEvent } from './lib/proposal.events';
export type {
  ChildOutcomeRecorded,
  EscalationDefaulted,
  EscalationLadderEvent,
  EscalationReassigned,
  EscalationReminded,
  EscalationRouted,
  EscalationSignedOff,
  EscalationResolved,
  EventEnvelope,
  ProposalEscalated,
  ProposalEvent,
  ProposalExpired,
  ProposalResolved,
  ProposalSubmitted,
  ResponseRecorded,
  TerminalProposalEvent,
} from './lib/proposal.events';
export { evolveProposal, foldProposal, initialProposalState } from './lib/proposal.state';
export type {
  EscalatedProposal,
  EscalationDesk,
  ExpiredProposal,
  InitialProposal,
  PendingProposal,
  ProposalDetails,
  EligibleParticipantsSource,
  SecurityLabel,
  ProposalState,
  RecordedResponse,
  ResolvedProposal,
  SubmittedProposal,
} from './lib/proposal.state';
export {
  DEFAULT_DECIDER_CONFIG,
  decide,
  decideAdvanceEscalationLadder,
  decideRouteEscalation,
  decideEscalateProposal,
  decideExpireProposal,
  decideRecordChildOutcome,
  decideRecordResponse,
  decideResolveEscalation,
  decideResolveProposal,
  checkSubmission,
  decideSubmitProposal,
} from './lib/proposal.decider';
export type { DeciderConfig } from './lib/proposal.decider';
export { acceptsResponses, expiryDueAt, isExpiryDue, pendingResolution, projectProposal, statusAfter } from './lib/proposal.projection';
export { handleProposalCommand } from './lib/proposal.handler';
export type { CommandResult } from './lib/proposal.handler';

// decision events (spec 11)
export { PAYLOAD_SUMMARY_MAX_LENGTH, summarizePayload, toDecisionEvent } from './lib/decision-events';
export type { DecisionEventOptions } from './lib/decision-events';
export { expiryDeadlineMs, finalChildOutcome, reactionCommandId, resolverReactions } from './lib/proposal.workflows';
export type { ResolverReaction } from './lib/proposal.workflows';

// Appendix B JSON Schemas as values
export { WIRE_SCHEMAS } from './lib/wire-schemas';
export type { JsonSchema } from './lib/wire-schemas';

// custom policies per domain (spec 18.1, 18.2): the declarative, versioned policy document
export {
  DEFAULT_MAX_WEIGHTED_THRESHOLD,
  DOMAIN_POLICY_EVENT_TYPE,
  DOMAIN_POLICY_SCHEMA_VERSION,
  DOMAIN_POLICY_STREAM_CATEGORY,
  POLICY_PATTERNS,
  checkNextVersion,
  customPolicyMet,
  customPolicyOf,
  decideSetDomainPolicy,
  domainPolicyRef,
  domainPolicyStream,
  evolveDomainPolicy,
  governingDomains,
  maxWeightedThreshold,
  parseDomainPolicy,
  policyFor,
  policyWeight,
} from './lib/domain-policy';
export type {
  CustomQuorumPolicySpec,
  DomainPolicyDocument,
  DomainPolicyRef,
  DomainPolicySet,
  DomainPolicyState,
  SetDomainPolicy,
  WeightFunctionSpec,
} from './lib/domain-policy';
export { declarativeQuorumPolicy, effectiveQuorumPolicy } from './lib/quorum-policies';
export { recordedFirstDecision, replayUnderPolicy, summarizeReplay } from './lib/policy-replay';
export type { FirstDecision, ReplaySummary, ReplayVerdict } from './lib/policy-replay';
