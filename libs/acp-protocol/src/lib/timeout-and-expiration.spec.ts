/** Spec section 8 (timeout and expiration), table B.4, 15.5 grace. */
import { P1, at, challenge, endorse, expire, min, submit } from '../testing/fixtures';
import { given, stateAfter } from '../testing/given-when-then';
import { DEFAULT_DECIDER_CONFIG } from './proposal.decider';
import { expiryDueAt, isExpiryDue, projectProposal } from './proposal.projection';
import { expiryDeadline, isExpired } from './timeout-and-expiration';

const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };
const proposal = submit({ quorum: 3, expires_at: min(5) });

describe('8.1 timeout trigger', () => {
  it('8.1 a proposal is expired when now >= expires_at', () => {
    expect(isExpired(min(5), at(299))).toBe(false);
    expect(isExpired(min(5), min(5))).toBe(true);
    expect(isExpired(min(5), '2025-01-15T10:05:00.000000001Z')).toBe(true);
    expect(isExpired('2025-01-15T10:05:00.5Z', '2025-01-15T10:05:00.499999999+00:00')).toBe(false);
  });

  it('8.1 expiring before expires_at is refused (CONFLICT), nothing appended', () => {
    given([proposal])
      .when(expire(at(299)))
      .thenThrows('CONFLICT', 'proposal_id', /not expired/);
  });

  it('8.4 expires_at null never expires', () => {
    expect(isExpired(null, '2999-01-01T00:00:00Z')).toBe(false);
    given([submit({ expires_at: null })])
      .when(expire(min(60)))
      .thenThrows('CONFLICT', 'proposal_id', /8\.4/);
    expect(expiryDueAt(stateAfter([submit({ expires_at: null })]))).toBeNull();
  });
});

describe('8.2 expiration outcomes (table B.4)', () => {
  it('8.2 0 responses: status expired, outcome expired, trigger timeout; the projection shows the Resolution', () => {
    const { state } = given([proposal])
      .when(expire(min(5)))
      .then([
        { type: 'ProposalExpired', data: { resolution: { outcome: 'expired', trigger: 'timeout', votes_for: 0, votes_against: 0 } } },
      ]);
    expect(projectProposal(state).status).toBe('expired');
    expect(projectProposal(state).resolution).toEqual({
      schema_version: '1.0',
      outcome: 'expired',
      trigger: 'timeout',
      votes_for: 0,
      votes_against: 0,
      decided_at: min(5),
    });
  });

  it('8.2 for > against: resolved, approved, timeout', () => {
    given([proposal, endorse('a', F)])
      .when(expire(min(5)))
      .then([{ type: 'ProposalResolved', data: { resolution: { outcome: 'approved', trigger: 'timeout' } } }]);
  });

  it('8.2 against > for: resolved, rejected, timeout', () => {
    given([proposal, challenge('a', F)])
      .when(expire(min(5)))
      .then([{ type: 'ProposalResolved', data: { resolution: { outcome: 'rejected', trigger: 'timeout' } } }]);
  });

  it('8.2 / 10.1 a tie at timeout (incl. all-zero weights) escalates: reason timeout-tie, trigger timeout', () => {
    const { state } = given([proposal, endorse('a', F), challenge('b', F)])
      .when(expire(min(5), { actor: 'sweeper-1' }))
      .then([
        {
          type: 'ProposalEscalated',
          data: {
            resolution: { outcome: 'escalated', trigger: 'timeout' },
            escalation: { reason: 'timeout-tie', requested_by: 'sweeper-1' },
          },
        },
      ]);
    expect(state.status).toBe('escalated');
    const zero = { domain_authority: 0, confidence: 1, trust_score: 1 };
    given([proposal, endorse('a', zero)])
      .when(expire(min(5)))
      .then([{ type: 'ProposalEscalated' }]);
  });
});

describe('15.5 clock skew grace period', () => {
  const config = { ...DEFAULT_DECIDER_CONFIG, expiryGraceMs: 2000 };

  it('15.5 expires only at now >= expires_at + grace', () => {
    expect(isExpired(min(5), at(301), 2000)).toBe(false);
    expect(isExpired(min(5), at(302), 2000)).toBe(true);
    given([proposal], config)
      .when(expire(at(301)))
      .thenThrows('CONFLICT');
    given([proposal], config)
      .when(expire(at(302)))
      .then([{ type: 'ProposalExpired' }]);
  });

  it('8.3 the sweeper gets its deadline (expires_at + grace) and a due check from the state', () => {
    const s = stateAfter([proposal]);
    expect(expiryDueAt(s, config)).toBe('2025-01-15T10:05:02.000Z');
    expect(expiryDeadline(min(5), 0)).toBe(min(5));
    expect(expiryDeadline(min(5), 1.5)).toBe('2025-01-15T10:05:00.001Z');
    expect(isExpiryDue(s, at(301), config)).toBe(false);
    expect(isExpiryDue(s, at(302), config)).toBe(true);
    expect(isExpiryDue(stateAfter([proposal, expire(min(5))]), min(9), config)).toBe(false);
    expect(P1).toHaveLength(26);
  });
});
