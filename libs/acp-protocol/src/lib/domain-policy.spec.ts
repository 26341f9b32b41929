import fc from 'fast-check';
import {
  DEFAULT_MAX_WEIGHTED_THRESHOLD,
  DomainPolicyDocument,
  decideSetDomainPolicy,
  domainPolicyStream,
  governingDomains,
  parseDomainPolicy,
  policyFor,
  policyWeight,
} from './domain-policy';
import { AcpError } from './errors';
import { compare, decimalFromNumber } from './exact-decimal';
import { computeWeight } from './weighted-voting';
import { handleProposalCommand } from './proposal.handler';
import { foldProposal, initialProposalState, ProposalState } from './proposal.state';
import { toDecisionEvent } from './decision-events';
import { projectProposal } from './proposal.projection';
import type { ProposalCommand } from './proposal.commands';

const NOW = '2026-03-01T10:00:00.000Z';
let n = 0;
const ulidOf = (k: number) => `01J${String(k).padStart(23, '0')}`;
const meta = (actor: string) => ({ command_id: ulidOf(++n), now: NOW, actor });
const PROPOSAL_ID = '01HZZZZZZZZZZZZZZZZZZZZZZZ';

const doc = (extra: Record<string, unknown> = {}) => parseDomainPolicy({ schema_version: '1.0', domain: 'risk', version: 1, ...extra });

function refused(f: () => unknown): AcpError {
  try {
    f();
  } catch (err) {
    if (err instanceof AcpError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

function submit(policy: DomainPolicyDocument | undefined, extra: Record<string, unknown> = {}): ProposalState {
  const command = {
    type: 'SubmitProposal',
    ...meta('author'),
    data: {
      proposal_id: PROPOSAL_ID,
      type: 'proposal',
      domain: 'risk.credit',
      author: 'author',
      payload: { action: 'x' },
      quorum: 2,
      created_at: NOW,
      expires_at: null,
      ...(policy ? { policy } : {}),
      ...extra,
    },
  } as ProposalCommand;
  return handleProposalCommand(initialProposalState, command).state;
}

function respond(state: ProposalState, participant: string, type: 'endorse' | 'challenge', f: number[]) {
  const [confidence, domain_authority, trust_score] = f;
  return handleProposalCommand(state, {
    type: 'RecordResponse',
    ...meta(participant),
    data: {
      schema_version: '1.0',
      proposal_id: PROPOSAL_ID,
      participant_id: participant,
      response_type: type,
      confidence,
      domain_authority,
      trust_score,
      reason: null,
    },
  } as ProposalCommand);
}

describe('18.1/18.2 domain policy documents: validated on load', () => {
  it('given a complete document, when parsed, then every field is kept', () => {
    const d = doc({
      description: 'credit risk',
      weight_function: { kind: 'linear', coefficients: { domain_authority: 0.5, confidence: 0.3, trust_score: 0.2 } },
      quorum_policies: [{ kind: 'two-seniors', min_responses: 2, required_participants: ['senior-a'] }],
      default_quorum_policy: { kind: 'two-seniors' },
      max_weighted_threshold: 5,
    });
    expect(d).toMatchObject({ domain: 'risk', version: 1, max_weighted_threshold: 5, default_quorum_policy: { kind: 'two-seniors' } });
  });

  it.each([
    [{ schema_version: '2.0' }, 'UNSUPPORTED_SCHEMA_VERSION', 'schema_version'],
    [{ domain: 'risk..x' }, 'SCHEMA_VIOLATION', 'domain'],
    [{ version: 0 }, 'SCHEMA_VIOLATION', 'version'],
    [{ surprise: true }, 'SCHEMA_VIOLATION', 'surprise'],
    [{ weight_function: { kind: 'cubic' } }, 'SCHEMA_VIOLATION', 'weight_function.kind'],
    [{ weight_function: { kind: 'product', exponents: { confidence: 4 } } }, 'SCHEMA_VIOLATION', 'weight_function.exponents.confidence'],
    [
      { weight_function: { kind: 'linear', coefficients: { domain_authority: 0.1, confidence: 0.2, trust_score: 0.3 } } },
      'SCHEMA_VIOLATION',
      'weight_function.coefficients',
    ],
    [{ quorum_policies: [{ kind: 'count', min_responses: 1 }] }, 'SCHEMA_VIOLATION', 'quorum_policies.0.kind'],
    [{ quorum_policies: [{ kind: 'empty' }] }, 'SCHEMA_VIOLATION', 'quorum_policies.0'],
    [{ quorum_policies: [{ kind: 'heavy', min_total_weight: 101 }] }, 'SCHEMA_VIOLATION', 'quorum_policies.0.min_total_weight'],
    [
      { max_weighted_threshold: 3, quorum_policies: [{ kind: 'heavy', min_total_weight: 4 }] },
      'SCHEMA_VIOLATION',
      'quorum_policies.0.min_total_weight',
    ],
    [{ max_weighted_threshold: DEFAULT_MAX_WEIGHTED_THRESHOLD + 1 }, 'SCHEMA_VIOLATION', 'max_weighted_threshold'],
    [{ default_quorum_policy: { kind: 'unanimous' } }, 'SCHEMA_VIOLATION', 'default_quorum_policy.kind'],
    [{ default_quorum_policy: { kind: 'weighted', threshold: 200 } }, 'SCHEMA_VIOLATION', 'default_quorum_policy.threshold'],
  ])('given %j, when parsed, then it is refused with %s on %s', (extra, code, field) => {
    expect(refused(() => doc(extra))).toMatchObject({ code, field });
  });

  it('given the recorded version 1, when version 3 is set, then CONFLICT; the same document again is a no-op; version 2 is recorded', () => {
    const v1 = doc();
    expect(refused(() => decideSetDomainPolicy({ ...meta('admin'), data: { document: { ...v1, version: 3 } } }, v1))).toMatchObject({
      code: 'CONFLICT',
      field: 'version',
    });
    expect(decideSetDomainPolicy({ ...meta('admin'), data: { document: v1 } }, v1)).toEqual([]);
    const [e] = decideSetDomainPolicy({ ...meta('admin'), data: { document: { ...v1, version: 2 } } }, v1);
    expect(e.data.document.version).toBe(2);
  });

  it('the most specific document governs; stream names carry the domain in hex', () => {
    const docs = [doc(), doc({ domain: 'risk.credit' })];
    expect(policyFor('risk.credit.retail', docs)?.domain).toBe('risk.credit');
    expect(policyFor('risk.market', docs)?.domain).toBe('risk');
    expect(policyFor('riskier', docs)).toBeUndefined();
    expect(governingDomains('risk.credit.retail')).toEqual(['risk.credit.retail', 'risk.credit', 'risk']);
    expect(domainPolicyStream('a.b-c')).toBe('domain-policy-612e622d63');
  });
});

describe('18.2 weight functions', () => {
  const factor = fc.double({ min: -0.5, max: 1.5, noNaN: true });
  const fn = fc.oneof(
    fc.record({
      kind: fc.constant('product' as const),
      exponents: fc.record({
        domain_authority: fc.integer({ min: 0, max: 3 }),
        confidence: fc.integer({ min: 0, max: 3 }),
        trust_score: fc.integer({ min: 0, max: 3 }),
      }),
    }),
    fc
      .tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }))
      .filter(([a, b]) => a + b <= 100)
      .map(([a, b]) => ({
        kind: 'linear' as const,
        coefficients: { domain_authority: a / 100, confidence: b / 100, trust_score: (100 - a - b) / 100 },
      })),
  );

  it('property: any valid function gives a weight in [0, 1], the same for the same inputs', () => {
    fc.assert(
      fc.property(fn, factor, factor, factor, (f, a, c, t) => {
        const spec = doc({ weight_function: f }).weight_function;
        const w = policyWeight(spec, { domain_authority: a, confidence: c, trust_score: t });
        expect(compare(w.exact, decimalFromNumber(0))).toBeGreaterThanOrEqual(0);
        expect(compare(w.exact, decimalFromNumber(1))).toBeLessThanOrEqual(0);
        expect(policyWeight(spec, { domain_authority: a, confidence: c, trust_score: t })).toEqual(w);
      }),
    );
  });

  it('property: no function (or the default product) is exactly the 6.1 formula', () => {
    fc.assert(
      fc.property(factor, factor, factor, (a, c, t) => {
        const f = { domain_authority: a, confidence: c, trust_score: t };
        expect(policyWeight(undefined, f)).toEqual(computeWeight(f));
        expect(policyWeight({ kind: 'product' }, f)).toEqual(computeWeight(f));
      }),
    );
  });

  it('given exponents 1, 1, 1, then the product is exactly the 6.1 formula: clamp(da) x clamp(c) x clamp(t)', () => {
    const ones = { domain_authority: 1, confidence: 1, trust_score: 1 };
    const spec = doc({ weight_function: { kind: 'product', exponents: ones } }).weight_function;
    expect(spec).toEqual({ kind: 'product', exponents: ones });
    expect(policyWeight(spec, { domain_authority: 0.95, confidence: 0.9, trust_score: 0.95 }).weight).toBe(0.81225);
    // Each factor is clamped to [0, 1] before the product (6.1).
    expect(policyWeight(spec, { domain_authority: 1.5, confidence: 0.5, trust_score: 0.5 }).weight).toBe(0.25);
    expect(policyWeight(spec, { domain_authority: -0.5, confidence: 0.5, trust_score: 0.5 }).weight).toBe(0);
    fc.assert(
      fc.property(factor, factor, factor, (a, c, t) => {
        const f = { domain_authority: a, confidence: c, trust_score: t };
        const w = policyWeight(spec, f);
        expect(compare(w.exact, computeWeight(f).exact)).toBe(0);
        expect(w.weight).toBe(computeWeight(f).weight);
      }),
    );
  });

  it('a linear function weighs 0.5 da + 0.3 c + 0.2 t exactly', () => {
    const spec = doc({
      weight_function: { kind: 'linear', coefficients: { domain_authority: 0.5, confidence: 0.3, trust_score: 0.2 } },
    }).weight_function;
    expect(policyWeight(spec, { domain_authority: 0.9, confidence: 0.5, trust_score: 0.1 }).weight).toBe(0.62);
  });
});

describe('the decider under a domain policy', () => {
  const linear = doc({
    weight_function: { kind: 'linear', coefficients: { domain_authority: 0.5, confidence: 0.5, trust_score: 0 } },
    quorum_policies: [{ kind: 'senior-and-two', min_responses: 2, required_participants: ['senior'] }],
    default_quorum_policy: { kind: 'senior-and-two' },
    max_weighted_threshold: 2,
  });

  it('given a default custom policy, when two others respond, then it is not met; once the senior responds it resolves with the policy named', () => {
    let s = submit(linear);
    s = respond(s, 'a', 'endorse', [0.8, 0.6, 0.1]).state;
    const second = respond(s, 'b', 'challenge', [0.4, 0.2, 0.9]);
    expect(second.decisions).toEqual([]);
    s = second.state;
    expect(s.status).toBe('pending');
    if (s.status !== 'pending') return;
    // Weights by the document's function, not 6.1: 0.5*0.6 + 0.5*0.8 = 0.7.
    expect(s.responses.map((r) => r.response.weight)).toEqual([0.7, 0.3]);
    s = respond(s, 'senior', 'endorse', [1, 1, 0.5]).state;
    const resolved = handleProposalCommand(s, {
      type: 'ResolveProposal',
      ...meta('resolver'),
      data: { proposal_id: PROPOSAL_ID },
    } as ProposalCommand);
    expect(resolved.state.status).toBe('resolved');
    const decision = toDecisionEvent(resolved.events[0], resolved.state);
    expect(decision).toMatchObject({
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.7,
      votes_against: 0.3,
      policy: { domain: 'risk', version: 1 },
    });
    expect(projectProposal(resolved.state).policy).toEqual(linear);
  });

  it('a replay of the events reproduces the state, weights included', () => {
    let s = submit(linear);
    const events = [];
    for (const [who, t, f] of [
      ['a', 'endorse', [0.8, 0.6, 0.1]],
      ['b', 'challenge', [0.4, 0.2, 0.9]],
    ] as const) {
      const r = respond(s, who, t, [...f]);
      events.push(...r.events);
      s = r.state;
    }
    const submitted = handleProposalCommand(initialProposalState, {
      type: 'SubmitProposal',
      ...meta('author'),
      data: {
        proposal_id: PROPOSAL_ID,
        type: 'proposal',
        domain: 'risk.credit',
        author: 'author',
        payload: { action: 'x' },
        quorum: 2,
        created_at: NOW,
        expires_at: null,
        policy: linear,
      },
    } as ProposalCommand).events;
    const replayed = foldProposal([...submitted, ...events]);
    expect(replayed.status === 'pending' && replayed.responses.map((r) => r.response.weight)).toEqual([0.7, 0.3]);
  });

  it('a weighted threshold above the domain bound is refused at submission (the default bound without a document)', () => {
    expect(refused(() => submit(linear, { quorum_policy: { kind: 'weighted', threshold: 2.5 } }))).toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'quorum_policy.threshold',
    });
    expect(submit(linear, { quorum_policy: { kind: 'weighted', threshold: 2 } }).status).toBe('pending');
    expect(
      refused(() => submit(undefined, { quorum_policy: { kind: 'weighted', threshold: DEFAULT_MAX_WEIGHTED_THRESHOLD + 1 } })),
    ).toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'quorum_policy.threshold',
    });
  });

  it('a custom kind is only known where its document governs', () => {
    expect(submit(linear, { quorum_policy: { kind: 'senior-and-two' } }).status).toBe('pending');
    expect(refused(() => submit(undefined, { quorum_policy: { kind: 'senior-and-two' } }))).toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'quorum_policy.kind',
    });
  });
});
