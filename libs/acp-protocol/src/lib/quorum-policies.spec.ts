/** Spec section 7 quorum policies and 18.1 custom policies. */
import { P1, challenge, endorse, expire, min, resolveByQuorum, submit } from '../testing/fixtures';
import { given, stateAfter } from '../testing/given-when-then';
import { AcpError } from './errors';
import { DEFAULT_DECIDER_CONFIG, DeciderConfig } from './proposal.decider';
import { pendingResolution } from './proposal.projection';
import { QuorumPolicy, createQuorumPolicyRegistry, isQuorumMet } from './quorum-policies';
import type { PendingProposal } from './proposal.state';

const F = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 }; // 0.729
const HALF = { domain_authority: 1, confidence: 0.5, trust_score: 1 }; // 0.5

describe('7.1 count-based quorum (default)', () => {
  it('7.1 is met when len(responses) >= quorum, and is the default without quorum_policy', () => {
    expect(pendingResolution(stateAfter([submit({ quorum: 3 }), endorse('a', F), endorse('b', F)]))).toBeUndefined();
    expect(pendingResolution(stateAfter([submit({ quorum: 3 }), endorse('a', F), endorse('b', F), challenge('c', F)]))).toEqual({
      proposal_id: P1,
    });
  });

  it('7.1 an explicit count policy behaves as the default', () => {
    const s = stateAfter([submit({ quorum: 1, quorum_policy: { kind: 'count' } }), endorse('a', F)]);
    expect(pendingResolution(s)).toEqual({ proposal_id: P1 });
  });
});

describe('7.2 weighted quorum (extension)', () => {
  const weighted = (threshold: number) => submit({ quorum: 1, quorum_policy: { kind: 'weighted', threshold } });

  it('7.2 is met when the exact total weight >= threshold', () => {
    expect(pendingResolution(stateAfter([weighted(1), endorse('a', HALF)]))).toBeUndefined();
    expect(pendingResolution(stateAfter([weighted(1), endorse('a', HALF), challenge('b', HALF)]))).toEqual({ proposal_id: P1 });
  });

  it('7.2 compares exactly: 0.1 + 0.2 reaches a threshold of 0.3', () => {
    const s = stateAfter([
      weighted(0.3),
      endorse('a', { domain_authority: 0.1, confidence: 1, trust_score: 1 }),
      endorse('b', { domain_authority: 0.2, confidence: 1, trust_score: 1 }),
    ]);
    expect(pendingResolution(s)).toEqual({ proposal_id: P1 });
  });

  it('7.2 the threshold must be a number > 0', () => {
    given([])
      .when(submit({ quorum_policy: { kind: 'weighted' } }))
      .thenThrows('SCHEMA_VIOLATION', 'quorum_policy.threshold');
    given([])
      .when(submit({ quorum_policy: { kind: 'weighted', threshold: 0 } }))
      .thenThrows('SCHEMA_VIOLATION', 'quorum_policy.threshold');
  });
});

describe('7.3 unanimous quorum (extension)', () => {
  const unanimous = (eligible: string[]) => submit({ quorum: 1, quorum_policy: { kind: 'unanimous' }, eligible_participants: eligible });

  it('7.3 is met when every eligible participant (fixed at submission, author excluded) has responded', () => {
    const h = [unanimous(['agent-risk-001', 'a', 'b']), endorse('a', F)];
    expect(pendingResolution(stateAfter(h))).toBeUndefined();
    expect(pendingResolution(stateAfter([...h, endorse('outsider', F)]))).toBeUndefined();
    expect(pendingResolution(stateAfter([...h, challenge('b', F)]))).toEqual({ proposal_id: P1 });
  });

  it('7.3 needs the eligible set at proposal creation time', () => {
    given([])
      .when(submit({ quorum_policy: { kind: 'unanimous' } }))
      .thenThrows('SCHEMA_VIOLATION', 'eligible_participants');
    given([])
      .when(unanimous(['agent-risk-001']))
      .thenThrows('SCHEMA_VIOLATION', 'eligible_participants');
  });
});

describe('7.4 quorum check ordering', () => {
  it('7.4 when quorum is met at the moment of expiry, the trigger is QUORUM', () => {
    given([submit({ quorum: 2, expires_at: min(5) }), endorse('a', F), challenge('b', HALF)])
      .when(expire(min(5)))
      .then([{ type: 'ProposalResolved', data: { resolution: { outcome: 'approved', trigger: 'quorum' } } }]);
  });
});

describe('18.1 custom quorum policies', () => {
  // "two endorsements" - a custom policy over the proposal state.
  const twoEndorsements: QuorumPolicy = {
    kind: 'two-endorsements',
    isMet: (p: PendingProposal) => p.responses.filter((r) => r.response.response_type === 'endorse').length >= 2,
  };
  const config: DeciderConfig = { ...DEFAULT_DECIDER_CONFIG, quorumPolicies: createQuorumPolicyRegistry([twoEndorsements]) };

  it('18.1 a registered custom policy decides when quorum is met', () => {
    const h = [submit({ quorum: 1, quorum_policy: { kind: 'two-endorsements' } }), endorse('a', F), challenge('b', F)];
    expect(pendingResolution(stateAfter(h, config), config)).toBeUndefined();
    const s = stateAfter([...h, endorse('c', HALF)], config);
    expect(isQuorumMet(s as PendingProposal, config.quorumPolicies)).toBe(true);
    given([...h, endorse('c', HALF)], config)
      .when(resolveByQuorum())
      .then([{ type: 'ProposalResolved' }]);
  });

  it('18.1 an unregistered kind is refused at submission, naming quorum_policy.kind', () => {
    given([])
      .when(submit({ quorum_policy: { kind: 'two-endorsements' } }))
      .thenThrows('SCHEMA_VIOLATION', 'quorum_policy.kind');
  });

  it('17.3 built-in kinds cannot be replaced (core semantics stay interoperable)', () => {
    expect(() => createQuorumPolicyRegistry([{ kind: 'count', isMet: () => true }])).toThrow(AcpError);
    expect(() => createQuorumPolicyRegistry([twoEndorsements, twoEndorsements])).toThrow(AcpError);
  });
});
