/**
 * Wire objects of spec section 12 and Appendix B (field names exactly as the spec writes them).
 * Extension fields (spec 18) are marked; the Appendix B schemas do not forbid additional
 * properties, so every object here still validates against them.
 */
import type {
  EntryType,
  EscalationReason,
  HumanOutcome,
  Outcome,
  ProposalStatus,
  ResponseType,
  Trigger,
  WireSchemaVersion,
} from './contracts';
import type { DomainPolicyDocument, DomainPolicyRef } from './domain-policy';

export type JsonObject = { [key: string]: unknown };

/** Spec 12.3 / 12.4 / B.1 `$defs.Response`. */
export interface Response {
  schema_version: WireSchemaVersion;
  participant_id: string;
  response_type: ResponseType;
  confidence: number;
  domain_authority: number;
  trust_score: number;
  /** Always computed by the service (spec 6.1); a client-sent weight is discarded. */
  weight: number;
  reason?: string | null;
  timestamp: string;
}

/** Spec 10.3 escalation metadata (extension field on Proposal, Resolution and DecisionEvent). */
export interface EscalationMetadata {
  reason: EscalationReason;
  escalated_at: string;
  requested_by: string;
  /** Free text: the manual escalation's reason, or the policy rule that matched. */
  note?: string | null;
  /** Id of the escalation policy rule (reason `policy`). */
  policy_id?: string;
  /** Who is responsible for the human resolution, when a policy names one (10.3). */
  assigned_to?: string;
}

/** Spec 12.5 / B.1 `$defs.Resolution`. */
export interface Resolution {
  schema_version: WireSchemaVersion;
  outcome: Outcome;
  trigger: Trigger;
  votes_for: number;
  votes_against: number;
  decided_at: string;
  /** Extension: observation/hypothesis auto-resolution (spec 4.2). */
  auto_resolved?: true;
  /** Extension: the human who resolved an escalation (spec 10.2). */
  resolved_by?: string;
  /** Extension: the human's note. */
  note?: string | null;
  /** Extension: why it was escalated, on an escalated outcome and kept after human resolution. */
  escalation?: EscalationMetadata;
  /** Extension: a parent proposal's recorded child outcomes (spec 9.3). */
  child_outcomes?: Record<string, ChildOutcome>;
  /** Extension: the M-of-N human sign-offs that decided it (escalation desk). */
  sign_offs?: HumanSignOffRecord[];
  /** Extension: one of the named humans vetoed (rejected) under a veto route. */
  vetoed?: true;
  /** Extension: no human resolved in time; the escalation ladder's default outcome applied. */
  ladder_default?: true;
}

/** One human's sign-off under an M-of-N route. */
export interface HumanSignOffRecord {
  by: string;
  outcome: HumanOutcome;
  note: string | null;
  at: string;
}

/** Final outcome of a child proposal as recorded on its parent (spec 9.3). */
export type ChildOutcome = 'approved' | 'rejected' | 'expired';

/** Extension: the quorum policy of a proposal (spec 7, 18.1). */
export interface QuorumPolicySpec {
  kind: string;
  threshold?: number;
}

/** Spec 12.2 / B.1 Proposal. */
export interface Proposal {
  schema_version: WireSchemaVersion;
  proposal_id: string;
  type: EntryType;
  domain: string;
  author: string;
  payload: JsonObject;
  status: ProposalStatus;
  responses: Response[];
  quorum: number;
  created_at: string;
  expires_at: string | null;
  resolution: Resolution | null;
  /** Extension (7.2, 7.3, 18.1); absent means count-based quorum (7.1). */
  quorum_policy?: QuorumPolicySpec;
  /** Extension (9.3): child proposal ids this parent waits for. */
  depends_on?: string[];
  /** Extension (10.3): set once escalated. */
  escalation?: EscalationMetadata;
  /** Extension (14.3, 14.6): hash of the payload, stamped by the edge. */
  payload_hash?: string;
  /** Extension (11.3): ids of the earlier entries that caused this one. */
  caused_by?: string[];
  /** Extension (7.3): who must respond under a unanimous quorum, fixed at submission. */
  eligible_participants?: string[];
  /** Extension (18.1/18.2): the domain's policy document it is decided by, as stamped at submission. */
  policy?: DomainPolicyDocument;
}

/** Spec 12.6 / B.2 Decision Event, with the 11.3 lineage extensions. */
export interface DecisionEvent {
  schema_version: WireSchemaVersion;
  event_id: string;
  event_type: 'decision';
  proposal_id: string;
  domain: string;
  outcome: Outcome;
  trigger: Trigger;
  votes_for: number;
  votes_against: number;
  decided_at: string;
  /** 11.3: the proposal that caused it. */
  caused_by: string;
  /** 11.3 extension: the earlier entries that caused that proposal (its `caused_by`), when it named any. */
  proposal_caused_by?: string[];
  /** 11.3: a short, deterministic summary of the proposal payload. */
  payload_summary: string;
  payload_hash?: string;
  correlation_id: string;
  escalation?: EscalationMetadata;
  resolved_by?: string;
  note?: string | null;
  auto_resolved?: true;
  sign_offs?: HumanSignOffRecord[];
  vetoed?: true;
  ladder_default?: true;
  /** Extension (18.1/18.2): the domain policy document (domain and version) the proposal was decided by. */
  policy?: DomainPolicyRef;
}

/** Body of `acp.v1.propose` (DESIGN section 5), after validation. */
export interface ProposeRequest {
  schema_version: WireSchemaVersion;
  /** Absent: the edge assigns a ULID. */
  proposal_id?: string;
  type: EntryType;
  domain: string;
  author: string;
  payload: JsonObject;
  quorum: number;
  created_at: string;
  expires_at: string | null;
  quorum_policy?: QuorumPolicySpec;
  depends_on?: string[];
  /** Unanimous quorum (7.3): who must respond. Absent: the edge may take it from the registry. */
  eligible_participants?: string[];
  /** 11.3: ids of earlier entries (observations, hypotheses, proposals) that caused this one. */
  caused_by?: string[];
}

/** Body of `acp.v1.lineage`: the causes and effects of one entry, up to `depth` links away. */
export interface LineageRequest {
  proposal_id: string;
  depth?: number;
}

/** Body of `acp.v1.respond`: a Response plus proposal_id; weight is never taken from the client. */
export interface RespondRequest {
  schema_version: WireSchemaVersion;
  proposal_id: string;
  participant_id: string;
  response_type: ResponseType;
  confidence: number;
  /** Absent: the participant registry's value for the proposal's domain (DESIGN section 6). */
  domain_authority?: number;
  trust_score?: number;
  reason: string | null;
  /** Absent: the edge stamps `now`. */
  timestamp?: string;
}

export interface EscalateRequest {
  proposal_id: string;
  reason: string;
  requested_by: string;
}

export interface ResolveRequest {
  proposal_id: string;
  outcome: HumanOutcome;
  resolved_by: string;
  note: string | null;
  /** Extension: the escalation answered (its ProposalEscalated event id); a stale one is NOT_ESCALATED. */
  escalation_id?: string;
  /** Extension: the payload hash the human saw; a mismatch is CONFLICT. */
  payload_hash?: string;
}

export interface GetRequest {
  proposal_id: string;
}

export interface ListRequest {
  domain?: string;
  status?: ProposalStatus;
  limit?: number;
  cursor?: string;
}
