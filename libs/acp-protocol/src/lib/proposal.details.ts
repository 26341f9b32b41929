/**
 * What a proposal is, as submitted: the data of ProposalSubmitted and the fixed part of every
 * later state. Plain data with no dependency on the state or the events, so that both (and the
 * escalation ladder) can name it without importing each other.
 */
import type { WIRE_SCHEMA_VERSION } from './contracts';
import type { EntryType } from './contracts';
import type { DomainPolicyDocument } from './domain-policy';
import type { JsonObject, QuorumPolicySpec } from './wire-format';

export interface ProposalDetails {
  schema_version: typeof WIRE_SCHEMA_VERSION;
  proposal_id: string;
  type: EntryType;
  domain: string;
  author: string;
  payload: JsonObject;
  quorum: number;
  created_at: string;
  expires_at: string | null;
  /** null: the default count-based quorum (7.1). */
  quorum_policy: QuorumPolicySpec | null;
  /** Child proposal ids (9.3); empty for an ordinary proposal. */
  depends_on: string[];
  /** Unanimous quorum (7.3): fixed when submitted. null when not supplied. */
  eligible_participants: string[] | null;
  /**
   * Where `eligible_participants` came from: the agent's request, or the registry's grants on the
   * domain filled in by the edge. A retry is compared on what the agent sent, not on what the
   * registry says at the time. Absent on proposals recorded before it existed (taken as `request`).
   */
  eligible_participants_source?: EligibleParticipantsSource;
  /** 11.3: ids of earlier entries that caused this one (checked to exist by the edge). Absent: none. */
  caused_by?: string[];
  payload_hash: string | null;
  /**
   * The security label the edge stamped at submission (null: none). Absent on proposals
   * submitted before labels were part of the submission: their label, if any, is in a stream
   * of its own.
   */
  security_label?: SecurityLabel | null;
  /**
   * 18.1/18.2: the domain's policy document in force at submission, stamped by the edge. Absent:
   * no document governs the domain (built-in policies, 6.1 weights).
   */
  policy?: DomainPolicyDocument;
}

export type EligibleParticipantsSource = 'request' | 'registry';

/** Classification (14.5) and payload signature (14.3) of a proposal, as the edge checked them. */
export interface SecurityLabel {
  classification: string | null;
  /** Ed25519 signature of the payload's canonical JSON by the author, base64, as sent. */
  payload_signature: string | null;
  /** The author's key that verified it (auth required), or null when it was not checked. */
  payload_signature_key_id: string | null;
}
