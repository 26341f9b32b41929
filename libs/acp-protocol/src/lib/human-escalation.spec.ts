/** Spec section 10 human escalation: triggers, state, metadata, human resolution; policy rules. */
import { P1, at, challenge, endorse, escalate, resolveByQuorum, resolveEscalation, submit } from '../testing/fixtures';
import { given, stateAfter } from '../testing/given-when-then';
import { AcpError } from './errors';
import { EscalationPolicyRule, matchEscalationPolicy, parseEscalationPolicies } from './human-escalation';
import { DEFAULT_DECIDER_CONFIG } from './proposal.decider';
import { projectProposal } from './proposal.projection';
import type { ProposalDetails } from './proposal.state';

const F = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };

describe('10.1 escalation triggers', () => {
  it('10.1 item 2 manual: an authorized participant escalates a pending proposal (reason manual, trigger manual)', () => {
    const { state } = given([submit({ quorum: 3 }), endorse('a', F)])
      .when(escalate('contract terms unclear', { requested_by: 'agent-legal-1', now: at(30) }))
      .then([
        {
          type: 'ProposalEscalated',
          data: {
            resolution: { outcome: 'escalated', trigger: 'manual', votes_for: 0.729, votes_against: 0, decided_at: at(30) },
            escalation: { reason: 'manual', escalated_at: at(30), requested_by: 'agent-legal-1', note: 'contract terms unclear' },
          },
        },
      ]);
    expect(projectProposal(state)).toMatchObject({ status: 'escalated', escalation: { reason: 'manual' } });
  });

  it('10.1 a proposal whose quorum is already met cannot be escalated by hand (its outcome is decided)', () => {
    given([submit({ quorum: 1 }), endorse('a', F)])
      .when(escalate())
      .thenThrows('PROPOSAL_NOT_PENDING', 'proposal_id', /quorum/);
  });

  it('10.1 item 3 policy-defined: a matching rule escalates on submission, before voting (reason policy)', () => {
    const rules: EscalationPolicyRule[] = [
      { id: 'prod', domain_prefix: 'ops', when: { path: 'payload.env', equals: 'production' }, assign_to: 'team-sre' },
    ];
    const config = { ...DEFAULT_DECIDER_CONFIG, escalationPolicies: rules };
    given([], config)
      .when(submit({ domain: 'ops.deploy', payload: { env: 'production' } }))
      .then([
        { type: 'ProposalSubmitted' },
        {
          type: 'ProposalEscalated',
          data: {
            resolution: { outcome: 'escalated', trigger: 'manual' },
            escalation: { reason: 'policy', requested_by: 'policy:prod', policy_id: 'prod', assigned_to: 'team-sre' },
          },
        },
      ]);
    given([], config)
      .when(submit({ domain: 'ops.deploy', payload: { env: 'staging' } }))
      .then([{ type: 'ProposalSubmitted' }]);
    given([], config)
      .when(submit({ domain: 'opsx', payload: { env: 'production' } }))
      .then([{ type: 'ProposalSubmitted' }]);
  });
});

describe('10.2 escalation state and human resolution', () => {
  const escalated = [submit(), endorse('a', F), challenge('b', F), resolveByQuorum()];

  it('10.2 no further automated responses are accepted once escalated', () => {
    given(escalated).when(endorse('c', F)).thenThrows('PROPOSAL_NOT_PENDING');
  });

  it('10.2 a human sets APPROVED or REJECTED with trigger MANUAL; resolved_by and note are recorded', () => {
    for (const outcome of ['approved', 'rejected'] as const) {
      const { state } = given(escalated)
        .when(resolveEscalation(outcome, { resolved_by: 'human:bob', note: 'checked flood maps', now: at(900) }))
        .then([
          {
            type: 'EscalationResolved',
            data: {
              resolution: {
                outcome,
                trigger: 'manual',
                decided_at: at(900),
                resolved_by: 'human:bob',
                note: 'checked flood maps',
                escalation: { reason: 'tie' },
              },
            },
          },
        ]);
      expect(projectProposal(state)).toMatchObject({
        status: 'resolved',
        resolution: { outcome, trigger: 'manual' },
        escalation: { reason: 'tie' },
      });
    }
  });

  it('10.2 human resolution only when escalated: NOT_ESCALATED otherwise', () => {
    given([submit()]).when(resolveEscalation('approved')).thenThrows('NOT_ESCALATED', 'proposal_id');
  });

  it('10.3 the metadata records reason, timestamp and who requested it', () => {
    const s = stateAfter([submit(), escalate('why', { requested_by: 'agent-x', now: at(5) })]);
    expect(projectProposal(s).escalation).toEqual({ reason: 'manual', escalated_at: at(5), requested_by: 'agent-x', note: 'why' });
    expect(P1).toBeDefined();
  });
});

describe('10.1 item 3 escalation policy rules (pure configuration)', () => {
  const details = (over: Partial<ProposalDetails>): ProposalDetails => ({
    schema_version: '1.0',
    proposal_id: P1,
    type: 'proposal',
    domain: 'ops.deploy',
    author: 'agent-1',
    payload: {},
    quorum: 1,
    created_at: at(0),
    expires_at: null,
    quorum_policy: null,
    depends_on: [],
    eligible_participants: null,
    payload_hash: null,
    ...over,
  });

  it('matches by segment-wise domain prefix and by conditions on paths (equals, in, exists, all, any, not)', () => {
    const rules = parseEscalationPolicies([
      {
        id: 'big',
        domain_prefix: 'risk',
        when: { all: [{ path: 'payload.amount_usd', in: [1000000, 5000000] }, { not: { path: 'payload.waiver', exists: true } }] },
      },
      {
        id: 'tagged',
        when: {
          any: [
            { path: 'payload.tags', equals: ['prod', 'db'] },
            { path: 'author', equals: 'agent-root' },
          ],
        },
      },
    ]);
    expect(matchEscalationPolicy(rules, details({ domain: 'risk.credit', payload: { amount_usd: 1000000 } }))?.id).toBe('big');
    expect(matchEscalationPolicy(rules, details({ domain: 'risk', payload: { amount_usd: 1000000 } }))?.id).toBe('big');
    // Segment-wise, not a string prefix: riskx is another domain than risk.
    for (const domain of ['riskx', 'riskx.credit'])
      expect(matchEscalationPolicy(rules, details({ domain, payload: { amount_usd: 1000000 } }))).toBeUndefined();
    expect(
      matchEscalationPolicy(rules, details({ domain: 'risk.credit', payload: { amount_usd: 1000000, waiver: true } })),
    ).toBeUndefined();
    expect(matchEscalationPolicy(rules, details({ payload: { tags: ['prod', 'db'] } }))?.id).toBe('tagged');
    expect(matchEscalationPolicy(rules, details({ author: 'agent-root' }))?.id).toBe('tagged');
    expect(matchEscalationPolicy(rules, details({ payload: { toString: 'x' } }))).toBeUndefined();
  });

  it('the first matching rule in configuration order wins', () => {
    const rules = parseEscalationPolicies([{ id: 'one', domain_prefix: 'ops' }, { id: 'two' }]);
    expect(matchEscalationPolicy(rules, details({}))?.id).toBe('one');
    expect(matchEscalationPolicy(rules, details({ domain: 'risk' }))?.id).toBe('two');
  });

  it('a bad configuration is refused with SCHEMA_VIOLATION naming the field', () => {
    const bad: [unknown, string][] = [
      [{}, 'escalation_policies'],
      [[{ id: '' }], 'escalation_policies.0.id'],
      [[{ id: 'a' }, { id: 'a' }], 'escalation_policies.1.id'],
      [[{ id: 'a', domain_prefix: 'ops.*' }], 'escalation_policies.0.domain_prefix'],
      [[{ id: 'a', when: { path: 'payload.env' } }], 'escalation_policies.0.when'],
      [[{ id: 'a', when: { all: [] } }], 'escalation_policies.0.when.all'],
      [[{ id: 'a', when: { any: [{ path: '', equals: 1 }] } }], 'escalation_policies.0.when.any.0.path'],
      [[{ id: 'a', assign_to: 3 }], 'escalation_policies.0.assign_to'],
    ];
    for (const [config, field] of bad) {
      let caught: unknown;
      try {
        parseEscalationPolicies(config);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(AcpError);
      expect((caught as AcpError).field).toBe(field);
    }
  });
});
