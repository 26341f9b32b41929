import { CouncilError } from '../errors';
import {
  CapabilityRunInput,
  capabilityObservations,
  capabilityOf,
  emptyCapabilityProjection,
  evolveCapabilities,
  parseCapabilityOptions,
  projectCapabilities,
  scopeKey,
} from './capability';
import { memberFixture, runRecordFixture } from './evaluation-fixtures';
import { StructuredOutcome } from './outcomes';

const ann = memberFixture('ann', 'model-a', 'v1', ['search']);
const bob = memberFixture('bob', 'model-b', '2024-05');
const cat = memberFixture('cat', 'model-c', '1.0');

function outcome(
  decisionId: string,
  verdict: StructuredOutcome['verdict'],
  observed_at: string,
  id = `${decisionId}:o1`,
): StructuredOutcome {
  return {
    outcome_id: id,
    decision_id: decisionId,
    observed_at,
    recorded_by: 'owner-1',
    recorder_role: 'decision-owner',
    source_kind: verdict === 'unknown' ? 'unknown' : 'operational-observation',
    verdict,
    actions: [],
    expected_outcomes: [],
    reversal_signals: [],
    stop_loss_conditions: [],
    summary: verdict,
    evidence_refs: verdict === 'unknown' ? [] : ['dashboard-1'],
  };
}

/** A run where ann and bob propose, cat reviews (warning against `warnedOn`), and `chair` decides for `selected`. */
function run(
  run_id: string,
  at: string,
  opts: {
    selected: string;
    chair?: string;
    verdict?: StructuredOutcome['verdict'];
    domain?: string;
    members?: (typeof ann)[];
    warnedOn?: string;
  },
): CapabilityRunInput {
  const members = opts.members ?? [ann, bob, cat];
  const record = runRecordFixture({
    run_id,
    at,
    members,
    candidates: [
      { id: `${run_id}-A`, author: members[0].member_id },
      { id: `${run_id}-B`, author: members[1].member_id },
    ],
    reviews: [
      { reviewer: members[2].member_id, target: `${run_id}-A`, high: opts.warnedOn === 'A' },
      { reviewer: members[2].member_id, target: `${run_id}-B`, high: opts.warnedOn === 'B' },
    ],
    chair: opts.chair ?? members[2].member_id,
    selected: `${run_id}-${opts.selected}`,
  });
  const outcomes = opts.verdict ? [outcome(`${run_id}:decision`, opts.verdict, at.replace('T10', 'T20'))] : [];
  return { record, domain: opts.domain ?? 'infra', outcomes };
}

const est = (p: ReturnType<typeof projectCapabilities>, m: typeof ann, role: 'proposer' | 'reviewer' | 'synthesizer', domain = 'infra') =>
  capabilityOf(p, m, role, domain);

describe('spec 15.3 capability estimation (council:L4, checklist 13): scoped, uncertain, counted', () => {
  it('given one decided run with a successful outcome, when projected, then proposer, reviewer and synthesizer are separate estimates keyed by family × version × role × domain × tools', () => {
    const p = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success' })]);
    expect(Object.keys(p.estimates).sort()).toEqual(
      [
        'model-a|v1|proposer|infra|search',
        'model-b|2024-05|proposer|infra|',
        'model-c|1.0|reviewer|infra|',
        'model-c|1.0|synthesizer|infra|',
      ].sort(),
    );
    // Chair: one outcome success on a uniform prior: Beta(2, 1).
    expect(est(p, cat, 'synthesizer')).toMatchObject({
      alpha: 2,
      beta: 1,
      observations: 1,
      evidence: { outcome: { count: 1, weight: 1 } },
    });
    expect(est(p, cat, 'synthesizer').estimate).toBeCloseTo(2 / 3, 12);
    // ann: chosen (peer 0.25) and its outcome succeeded (1): Beta(2.25, 1).
    expect(est(p, ann, 'proposer')).toMatchObject({ alpha: 2.25, beta: 1, observations: 2 });
    // bob: not chosen, a peer signal only: Beta(1, 1.25).
    expect(est(p, bob, 'proposer')).toMatchObject({ alpha: 1, beta: 1.25, observations: 1, evidence: { outcome: { count: 0 } } });
  });

  it('given the same member in another domain, when projected, then its estimate there is the prior: domain ratings stay separate (16.5)', () => {
    const p = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success' })]);
    const other = est(p, cat, 'synthesizer', 'legal');
    expect([other.alpha, other.beta, other.observations, other.estimate]).toEqual([1, 1, 0, 0.5]);
    expect(other.uncertainty).toBeGreaterThan(est(p, cat, 'synthesizer').uncertainty);
  });

  it('given peers chose ann but the outcome failed, when projected, then the outcome outweighs the preference and ann falls below the prior (15.4, 16.3)', () => {
    const p = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'failure' })]);
    expect(est(p, ann, 'proposer').estimate).toBeLessThan(0.5);
    expect(est(p, ann, 'proposer')).toMatchObject({ alpha: 1.25, beta: 2 });
  });

  it('given an unknown outcome, when projected, then no outcome evidence is recorded and nothing stands in for it (18)', () => {
    const p = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'unknown' })]);
    expect(Object.values(p.estimates).every((e) => e.evidence.outcome.count === 0)).toBe(true);
    expect(
      p.estimates[scopeKey({ model_family: 'model-c', model_version: '1.0', role: 'synthesizer', domain: 'infra', tools: '' })],
    ).toBeUndefined();
  });

  it('given a reviewer that warned against the chosen path, when the outcome fails, then it is credited; when it succeeds, debited', () => {
    const failed = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'failure', warnedOn: 'A' })]);
    const succeeded = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success', warnedOn: 'A' })]);
    expect(est(failed, cat, 'reviewer')).toMatchObject({ alpha: 2, beta: 1 });
    expect(est(succeeded, cat, 'reviewer')).toMatchObject({ alpha: 1, beta: 2 });
  });

  it('given issues the author accepted or rejected, when projected, then the reviewer gets a peer signal of the accepted share', () => {
    const base = run('r1', '2025-01-01T10:00:00Z', { selected: 'A' });
    const reviewId = base.record.artifacts.reviews[0].review_id;
    const record = runRecordFixture({
      run_id: 'r1',
      at: '2025-01-01T10:00:00Z',
      members: [ann, bob, cat],
      candidates: [
        { id: 'r1-A', author: 'ann' },
        { id: 'r1-B', author: 'bob' },
      ],
      reviews: [{ reviewer: 'cat', target: 'r1-A', high: true }],
      dispositions: { [reviewId]: true },
      chair: 'cat',
      selected: 'r1-A',
    });
    const obs = capabilityObservations({ record, domain: 'infra', outcomes: [] }).filter((o) => o.scope.role === 'reviewer');
    expect(obs).toEqual([expect.objectContaining({ member_id: 'cat', kind: 'peer-preference', success: 1 })]);
  });

  it('given few observations, when projected, then the estimate moves little and carries its uncertainty (16.4)', () => {
    const one = projectCapabilities([run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success' })]);
    const many = projectCapabilities(
      Array.from({ length: 20 }, (_, i) =>
        run(`r${i}`, `2025-01-${String(i + 1).padStart(2, '0')}T10:00:00Z`, { selected: 'A', verdict: 'success' }),
      ),
    );
    const a = est(one, cat, 'synthesizer');
    const b = est(many, cat, 'synthesizer');
    expect(a.estimate).toBeLessThan(0.7);
    expect(b.estimate).toBeGreaterThan(0.9);
    expect(b.uncertainty).toBeLessThan(a.uncertainty);
    expect(b.lower).toBeGreaterThan(a.lower);
    expect(b.observations).toBe(20);
  });
});

describe('spec 15.3 model version changes', () => {
  const history = (v2At: string) => [
    run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success' }),
    run('r2', '2025-01-02T10:00:00Z', { selected: 'A', verdict: 'success' }),
    run('r3', '2025-01-03T10:00:00Z', { selected: 'A', verdict: 'success' }),
    run('r4', v2At, { selected: 'A', verdict: 'success', members: [ann, bob, { ...cat, model_version: '2.0' }] }),
  ];
  it('given three successes on 1.0 and one on 2.0, when projected with reset, then 2.0 starts at the prior and 1.0 is superseded', () => {
    const p = projectCapabilities(history('2025-01-04T10:00:00Z'));
    const v1 = est(p, cat, 'synthesizer');
    const v2 = est(p, { ...cat, model_version: '2.0' }, 'synthesizer');
    expect([v1.alpha, v1.beta, v1.superseded_by]).toEqual([4, 1, '2.0']);
    expect([v2.alpha, v2.beta, v2.observations, v2.carried_from]).toEqual([2, 1, 1, null]);
  });
  it('given the same history, when projected with decay 0.5, then 2.0 starts from half of 1.0 evidence above the prior', () => {
    const p = projectCapabilities(history('2025-01-04T10:00:00Z'), { on_version_change: 0.5 });
    const v2 = est(p, { ...cat, model_version: '2.0' }, 'synthesizer');
    // 1.0 had Beta(4, 1): 3 above the prior on alpha; half carries, then one success.
    expect([v2.alpha, v2.beta, v2.carried_from]).toEqual([1 + 1.5 + 1, 1, { model_version: '1.0', factor: 0.5 }]);
  });
  it('given a member without a model_version, when projected, then it is scoped as version unknown, not merged with a known version', () => {
    const noVersion = { ...cat, model_version: undefined };
    const p = projectCapabilities([
      run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success', members: [ann, bob, noVersion] }),
    ]);
    expect(Object.keys(p.estimates)).toContain('model-c|unknown|synthesizer|infra|');
  });
});

describe('capability projection is a replayable fold', () => {
  const runs = [
    run('r1', '2025-01-01T10:00:00Z', { selected: 'A', verdict: 'success' }),
    run('r2', '2025-01-02T10:00:00Z', { selected: 'B', verdict: 'failure', warnedOn: 'B' }),
    run('r3', '2025-01-03T10:00:00Z', { selected: 'A', verdict: 'mixed', domain: 'legal' }),
    run('r4', '2025-01-04T10:00:00Z', { selected: 'B', members: [ann, bob, { ...cat, model_version: '2.0' }] }),
  ];
  it('given the same runs in any order, when rebuilt, then the projection is identical', () => {
    const a = projectCapabilities(runs, { on_version_change: 0.5 });
    const b = projectCapabilities([...runs].reverse(), { on_version_change: 0.5 });
    const c = projectCapabilities(JSON.parse(JSON.stringify([runs[2], runs[0], runs[3], runs[1]])), { on_version_change: 0.5 });
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });
  it('given an observation folded twice, when evolved, then the second is a no-op', () => {
    const obs = capabilityObservations(runs[0]);
    const once = obs.reduce(evolveCapabilities, emptyCapabilityProjection());
    expect([...obs, ...obs].reduce(evolveCapabilities, emptyCapabilityProjection())).toEqual(once);
  });
  it('given a mixed outcome, when projected, then it counts half a success', () => {
    const p = projectCapabilities([runs[2]]);
    expect(est(p, cat, 'synthesizer', 'legal')).toMatchObject({ alpha: 1.5, beta: 1.5 });
  });
  it('given policy input, when parsed, then defaults fill in and a decay factor or reset is accepted', () => {
    expect(parseCapabilityOptions(undefined)).toEqual({
      prior_alpha: 1,
      prior_beta: 1,
      outcome_weight: 1,
      peer_weight: 0.25,
      on_version_change: 'reset',
    });
    expect(parseCapabilityOptions({ on_version_change: 0.3, peer_weight: 0 })).toMatchObject({ on_version_change: 0.3, peer_weight: 0 });
    expect(() => parseCapabilityOptions({ on_version_change: 'forget' })).toThrow(CouncilError);
  });
  it.each([
    [{ peer_weight: 1, outcome_weight: 1 }, 'capability.peer_weight'],
    [{ on_version_change: 1 }, 'capability.on_version_change'],
    [{ prior_alpha: 0 }, 'capability.prior'],
  ])('given options %j, when the projection starts, then it is refused at %s', (options, field) => {
    let err: unknown;
    try {
      emptyCapabilityProjection(options);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CouncilError);
    expect((err as CouncilError).field).toBe(field);
  });
});
