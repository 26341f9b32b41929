import { parseDomainPolicy } from './domain-policy';
import { replayUnderPolicy, summarizeReplay } from './policy-replay';
import type { Proposal, Response } from './wire-format';

const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, s)).toISOString();
const vote = (participant_id: string, response_type: 'endorse' | 'challenge', f: [number, number, number], s: number): Response => ({
  schema_version: '1.0',
  participant_id,
  response_type,
  domain_authority: f[0],
  confidence: f[1],
  trust_score: f[2],
  weight: f[0] * f[1] * f[2],
  reason: null,
  timestamp: at(s),
});

function recorded(extra: Partial<Proposal>): Proposal {
  return {
    schema_version: '1.0',
    proposal_id: '01HZZZZZZZZZZZZZZZZZZZZZZZ',
    type: 'proposal',
    domain: 'risk.credit',
    author: 'agent-risk-001',
    payload: { action: 'approve_loan' },
    status: 'resolved',
    responses: [],
    quorum: 2,
    created_at: at(0),
    expires_at: null,
    resolution: null,
    ...extra,
  };
}

/** Appendix C.1 as the log recorded it: approved by quorum, 1.1645 for. */
const c1 = recorded({
  responses: [vote('agent-a', 'endorse', [0.9, 0.85, 0.9], 1), vote('agent-b', 'endorse', [0.8, 0.7, 0.85], 2)],
  resolution: { schema_version: '1.0', outcome: 'approved', trigger: 'quorum', votes_for: 1.1645, votes_against: 0, decided_at: at(2) },
});

/** Appendix C.3: quorum 3, one response, approved by timeout. */
const c3 = recorded({
  proposal_id: '01HZZZZZZZZZZZZZZZZZZZZZZY',
  domain: 'risk.budget',
  quorum: 3,
  expires_at: at(10),
  responses: [vote('agent-a', 'endorse', [0.8, 0.75, 0.9], 1)],
  resolution: { schema_version: '1.0', outcome: 'approved', trigger: 'timeout', votes_for: 0.54, votes_against: 0, decided_at: at(10) },
});

const policy = (extra: Record<string, unknown>) => parseDomainPolicy({ schema_version: '1.0', domain: 'risk', version: 2, ...extra });

describe('what-if replay of recorded proposals under a proposed policy', () => {
  it('given no document, when C.1 and C.3 are replayed under the built-in rules, then nothing changes', () => {
    expect(replayUnderPolicy(c1, undefined)).toMatchObject({
      kind: 'same',
      after: { outcome: 'approved', trigger: 'quorum', votes_for: 1.1645 },
    });
    expect(replayUnderPolicy(c3, undefined)).toMatchObject({
      kind: 'same',
      after: { outcome: 'approved', trigger: 'timeout', votes_for: 0.54 },
    });
  });

  it('given a default weighted threshold of 0.5, when C.3 is replayed, then its single vote meets quorum: approved by quorum instead of timeout', () => {
    const v = replayUnderPolicy(c3, policy({ default_quorum_policy: { kind: 'weighted', threshold: 0.5 } }));
    expect(v).toMatchObject({ kind: 'changed', before: { trigger: 'timeout' }, after: { outcome: 'approved', trigger: 'quorum' } });
  });

  it('given a policy requiring three responses, when C.1 is replayed, then it stays pending (two votes were all it got)', () => {
    const v = replayUnderPolicy(
      c1,
      policy({ quorum_policies: [{ kind: 'three', min_responses: 3 }], default_quorum_policy: { kind: 'three' } }),
    );
    expect(v).toMatchObject({ kind: 'changed', before: { outcome: 'approved' }, after: { outcome: 'pending' } });
  });

  it('given a weight function on confidence alone, when C.1 is replayed, then the outcome stands with new totals', () => {
    const v = replayUnderPolicy(
      c1,
      policy({ weight_function: { kind: 'linear', coefficients: { domain_authority: 0, confidence: 1, trust_score: 0 } } }),
    );
    expect(v).toMatchObject({ kind: 'same', after: { outcome: 'approved', votes_for: 1.55 } });
  });

  it('given a bound below a proposal’s weighted threshold, when replayed, then the proposed document would have refused it', () => {
    const heavy = recorded({
      quorum_policy: { kind: 'weighted', threshold: 3 },
      responses: c1.responses,
      resolution: null,
      status: 'pending',
    });
    expect(replayUnderPolicy(heavy, policy({ max_weighted_threshold: 2 }))).toMatchObject({ kind: 'refused', code: 'SCHEMA_VIOLATION' });
  });

  it('observations and manual escalations are not re-decided; a summary counts each kind', () => {
    const obs = recorded({ type: 'observation' });
    const manual = recorded({
      status: 'escalated',
      resolution: {
        schema_version: '1.0',
        outcome: 'escalated',
        trigger: 'manual',
        votes_for: 0,
        votes_against: 0,
        decided_at: at(3),
        escalation: { reason: 'manual', escalated_at: at(3), requested_by: 'x' },
      },
    });
    const p = policy({ default_quorum_policy: { kind: 'weighted', threshold: 0.5 } });
    const verdicts = [c1, c3, obs, manual].map((x) => replayUnderPolicy(x, p));
    expect(verdicts.map((v) => v.kind)).toEqual(['same', 'changed', 'skipped', 'skipped']);
    expect(summarizeReplay(verdicts)).toEqual({ examined: 4, changed: 1, same: 1, refused: 0, skipped: 2 });
  });
});
