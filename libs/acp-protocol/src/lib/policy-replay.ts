/**
 * What-if replay: would a past proposal have been decided otherwise under another domain policy?
 * The proposal is submitted again to the pure decider with the proposed document, its recorded
 * responses are applied in their recorded order at their recorded times, the resolver's and the
 * sweeper's moves are made where the originals happened, and the first decision is compared with
 * the recorded one. Nothing is written: this only folds states.
 */
import { AcpError } from './errors';
import type { DomainPolicyDocument } from './domain-policy';
import { isWithinDomain } from './domain-scoped-resolution';
import type { ProposalCommand } from './proposal.commands';
import { DEFAULT_DECIDER_CONFIG, DeciderConfig } from './proposal.decider';
import { handleProposalCommand } from './proposal.handler';
import { pendingResolution } from './proposal.projection';
import { initialProposalState, ProposalState } from './proposal.state';
import type { Outcome, Trigger } from './contracts';
import type { Proposal } from './wire-format';

/** The first decision of a proposal (an escalation counts: what the agents' votes decided). */
export interface FirstDecision {
  outcome: Outcome | 'pending';
  trigger: Trigger | null;
  votes_for: number;
  votes_against: number;
}

export type ReplayVerdict =
  | { kind: 'same'; before: FirstDecision; after: FirstDecision }
  | { kind: 'changed'; before: FirstDecision; after: FirstDecision }
  /** The proposed document would have refused the submission itself. */
  | { kind: 'refused'; before: FirstDecision; code: string; message: string }
  /** Not decided by votes (observations, hypotheses, parents, policy or manual escalations): nothing to re-decide. */
  | { kind: 'skipped'; before: FirstDecision; reason: string };

/** The recorded first decision: a human's resolution of an escalation is not the agents'. */
export function recordedFirstDecision(p: Proposal): FirstDecision {
  const r = p.resolution;
  if (!r) return { outcome: 'pending', trigger: null, votes_for: 0, votes_against: 0 };
  const e = r.escalation ?? p.escalation;
  if (e) {
    const trigger: Trigger = e.reason === 'tie' ? 'quorum' : e.reason === 'timeout-tie' ? 'timeout' : 'manual';
    return { outcome: 'escalated', trigger, votes_for: r.votes_for, votes_against: r.votes_against };
  }
  return { outcome: r.outcome, trigger: r.trigger, votes_for: r.votes_for, votes_against: r.votes_against };
}

function firstDecisionOf(state: ProposalState): FirstDecision {
  if (state.status === 'initial' || state.status === 'pending')
    return { outcome: 'pending', trigger: null, votes_for: 0, votes_against: 0 };
  const r = state.resolution;
  const outcome = state.status === 'escalated' ? 'escalated' : r.outcome;
  return { outcome, trigger: r.trigger, votes_for: r.votes_for, votes_against: r.votes_against };
}

/**
 * Re-decides one recorded proposal under `policy` (undefined: the built-in rules). `policy`
 * must govern the proposal's domain. The command ids are the proposal's own id: a replay's events
 * are never appended anywhere.
 */
export function replayUnderPolicy(
  p: Proposal,
  policy: DomainPolicyDocument | undefined,
  config: DeciderConfig = DEFAULT_DECIDER_CONFIG,
): ReplayVerdict {
  const before = recordedFirstDecision(p);
  if (policy && !isWithinDomain(p.domain, policy.domain))
    throw new AcpError('SCHEMA_VIOLATION', `${p.domain} is not governed by ${policy.domain}`, 'domain');
  if (p.type !== 'proposal') return { kind: 'skipped', before, reason: `${p.type}s are auto-resolved (4.2)` };
  if (p.depends_on && p.depends_on.length > 0) return { kind: 'skipped', before, reason: 'a parent is decided by its children (9.3)' };
  const escalation = p.resolution?.escalation ?? p.escalation;
  if (escalation && (escalation.reason === 'manual' || escalation.reason === 'policy')) {
    return {
      kind: 'skipped',
      before,
      reason: `escalated by ${escalation.reason === 'manual' ? 'a participant' : 'an escalation policy'}, not by votes`,
    };
  }
  const meta = (now: string, actor: string) => ({ command_id: p.proposal_id, now, actor });
  let state: ProposalState = initialProposalState;
  const run = (command: ProposalCommand): boolean => {
    try {
      state = handleProposalCommand(state, command, config).state;
      return true;
    } catch (err) {
      if (err instanceof AcpError) return false;
      throw err;
    }
  };
  try {
    state = handleProposalCommand(
      state,
      {
        type: 'SubmitProposal',
        ...meta(p.created_at, p.author),
        data: {
          proposal_id: p.proposal_id,
          type: p.type,
          domain: p.domain,
          author: p.author,
          payload: p.payload,
          quorum: p.quorum,
          created_at: p.created_at,
          expires_at: p.expires_at,
          ...(p.quorum_policy ? { quorum_policy: p.quorum_policy } : {}),
          ...(p.eligible_participants ? { eligible_participants: p.eligible_participants } : {}),
          ...(policy ? { policy } : {}),
        },
      },
      config,
    ).state;
  } catch (err) {
    if (err instanceof AcpError) return { kind: 'refused', before, code: err.code, message: err.message };
    throw err;
  }
  const resolveIfDue = (now: string) => {
    if (pendingResolution(state, config)) run({ type: 'ResolveProposal', ...meta(now, 'replay'), data: { proposal_id: p.proposal_id } });
  };
  for (const r of p.responses) {
    if (state.status !== 'pending') break;
    // A response the proposed rules would have refused (quorum already met) simply did not count.
    run({
      type: 'RecordResponse',
      ...meta(r.timestamp, r.participant_id),
      data: {
        proposal_id: p.proposal_id,
        participant_id: r.participant_id,
        response_type: r.response_type,
        confidence: r.confidence,
        domain_authority: r.domain_authority,
        trust_score: r.trust_score,
        reason: r.reason ?? null,
        timestamp: r.timestamp,
      },
    });
    resolveIfDue(r.timestamp);
  }
  // The sweeper's move, where the recorded one happened (or would have, at expires_at).
  if (state.status === 'pending' && p.expires_at !== null && p.resolution && p.resolution.trigger === 'timeout') {
    const at = p.resolution.decided_at;
    run({ type: 'ExpireProposal', ...meta(at, 'replay'), data: { proposal_id: p.proposal_id } });
  }
  const after = firstDecisionOf(state);
  const same = after.outcome === before.outcome && after.trigger === before.trigger;
  return { kind: same ? 'same' : 'changed', before, after };
}

export interface ReplaySummary {
  examined: number;
  changed: number;
  same: number;
  refused: number;
  skipped: number;
}

export function summarizeReplay(verdicts: Iterable<ReplayVerdict>): ReplaySummary {
  const s: ReplaySummary = { examined: 0, changed: 0, same: 0, refused: 0, skipped: 0 };
  for (const v of verdicts) {
    s.examined++;
    s[v.kind]++;
  }
  return s;
}
