/**
 * Is a command a retry of what is already recorded? An agent that timed out resends the same
 * request; the edge stamps a new command id and a new `now`, so only what the agent sent is
 * compared, never envelopes, time stamps or what the edge derived (payload hash, signature key).
 */
import { canonicalJson } from './canonical-json';
import type { RecordResponse, SubmitProposal } from './proposal.commands';
import type { ProposalDetails } from './proposal.details';
import { clampFactor } from './weighted-voting';
import type { Response } from './wire-format';

/** The eligible list as the agent sent it (undefined when the edge took it from the registry). */
function sentEligible(list: readonly string[] | null | undefined, source: string | undefined): readonly string[] | undefined {
  return source === 'registry' || !list ? undefined : list;
}

function sentOf(d: SubmitProposal['data']): unknown {
  return {
    proposal_id: d.proposal_id,
    type: d.type,
    domain: d.domain,
    author: d.author,
    payload: d.payload,
    quorum: d.quorum,
    created_at: d.created_at,
    expires_at: d.expires_at,
    quorum_policy: d.quorum_policy ?? null,
    depends_on: d.depends_on ?? [],
    eligible_participants: sentEligible(d.eligible_participants, d.eligible_participants_source) ?? null,
    caused_by: d.caused_by ?? [],
    classification: d.security_label?.classification ?? null,
    payload_signature: d.security_label?.payload_signature ?? null,
  };
}

function recordedOf(p: ProposalDetails): unknown {
  return {
    proposal_id: p.proposal_id,
    type: p.type,
    domain: p.domain,
    author: p.author,
    payload: p.payload,
    quorum: p.quorum,
    created_at: p.created_at,
    expires_at: p.expires_at,
    quorum_policy: p.quorum_policy,
    depends_on: p.depends_on,
    eligible_participants: sentEligible(p.eligible_participants, p.eligible_participants_source) ?? null,
    caused_by: p.caused_by ?? [],
    classification: p.security_label?.classification ?? null,
    payload_signature: p.security_label?.payload_signature ?? null,
  };
}

/** The same proposal, sent again by its author. */
export function isSameSubmission(recorded: ProposalDetails, command: SubmitProposal): boolean {
  return command.actor === recorded.author && canonicalJson(sentOf(command.data)) === canonicalJson(recordedOf(recorded));
}

/**
 * The same response, sent again: same type, factors (as clamped when recorded) and reason; a
 * timestamp is compared only when the retry sends one (left out, the first attempt's `now` stands).
 */
export function isSameResponse(recorded: Response, d: RecordResponse['data']): boolean {
  return (
    recorded.participant_id === d.participant_id &&
    recorded.response_type === d.response_type &&
    recorded.confidence === clampFactor(d.confidence) &&
    recorded.domain_authority === clampFactor(d.domain_authority) &&
    recorded.trust_score === clampFactor(d.trust_score) &&
    (recorded.reason ?? null) === (d.reason ?? null) &&
    (d.timestamp === undefined || d.timestamp === recorded.timestamp)
  );
}
