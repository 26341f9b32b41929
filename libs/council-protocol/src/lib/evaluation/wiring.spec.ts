import fc from 'fast-check';
import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E } from '../contracts';
import { CheckpointRecorded, RunStarted } from '../events';
import { parseCouncilPolicy } from '../policy';
import { buildRunRecord } from '../run-record';
import { decide } from '../decide';
import { CouncilRunState, StartedRun, evolveRun } from '../state';
import { at, defaultBehaviour, drive, goalContract, panel, startCommand, refusal, T0 } from '../../testing/council-fixtures';
import { MemberDescriptor } from '../member-descriptor';
import { CapabilityObservation, emptyCapabilityProjection, evolveCapabilities, memberScope } from './capability';
import { ChairSelection, selectChair } from './chair-selection';

/** The council:L4 and L5 wiring: policy keys, the checkpoint's aggregation, the chair's inputs, chair selection and structured outcomes. */

const L4 = (extra: Record<string, unknown> = {}) => ({ level: 'council:L4', aggregation: 'schulze', ...extra });
const domainGoal = goalContract({ domain: 'payments.migrations' });
/** Reviewers score candidate A highest, then C, then B (by blind letter), so ranking methods have a winner. */
const byLetter: Record<string, number> = { A: 5, B: 2, C: 4 };
const scored = defaultBehaviour({ score: (ref) => byLetter[/^anon-([A-Z]+)-/.exec(ref)?.[1] ?? 'A'] ?? 3 });

function run(policy: Record<string, unknown>, seed = 'seed-1', behaviour = scored) {
  return drive(startCommand({ goal: domainGoal, policy, seed }), behaviour);
}

/** The candidate ids of the lineage labelled `letter` (letters come from the seed, not the member). */
function candidatesLabelled(state: CouncilRunState, letter: string): string[] {
  if (state.status === 'empty') return [];
  return Object.values(state.lineages).find((l) => l.letter === letter)?.versions ?? [];
}

const checkpoints = (events: { type: string }[]) =>
  events.filter((e): e is CheckpointRecorded => e.type === E.CheckpointRecorded).map((e) => e.data.checkpoint);

describe('council:L4 and L5 policy keys (15.2, 15.3, 15.4, 14)', () => {
  it('given L4 and L5 policies with their keys, when parsed, then they are kept, validated and defaulted', () => {
    const p = parseCouncilPolicy(
      L4({
        level: 'council:L5',
        aggregation: { method: 'test-first-elimination', then: 'ranked-pairs' },
        chair_selection: { policy: 'exploration', rate: 0.2, min_observations: 3 },
        capability: { on_version_change: 0.5 },
        evaluators: ['qa-bot'],
        confidence_probabilities: { low: 0.2, medium: 0.5, high: 0.8 },
      }),
    );
    expect(p.level).toBe('council:L5');
    expect(p.aggregation).toEqual({ method: 'test-first-elimination', then: { method: 'ranked-pairs' } });
    expect(p.chair_selection).toEqual({ policy: 'exploration', rate: 0.2, min_observations: 3, base: 'scoped-capability' });
    expect(p.capability).toMatchObject({ on_version_change: 0.5, peer_weight: 0.25, outcome_weight: 1 });
    expect(p.evaluators).toEqual(['qa-bot']);
    expect(p.confidence_probabilities).toEqual({ low: 0.2, medium: 0.5, high: 0.8 });
  });

  it.each([
    [{ level: 'council:L4' }, 'policy.aggregation'],
    [L4({ aggregation: 'majority' }), 'policy.aggregation.method'],
    [L4({ aggregation: { method: 'weighted-rubric', weights: { evidence: -1 } } }), 'policy.aggregation.weights.evidence'],
    [L4({ chair_selection: 'seniority' }), 'policy.chair_selection.policy'],
    [L4({ chair_selection: { policy: 'exploration', rate: 2, min_observations: 1 } }), 'policy.chair_selection.rate'],
    [L4({ capability: { peer_weight: 1, outcome_weight: 1 } }), 'policy.capability.peer_weight'],
    [L4({ evaluators: 'qa-bot' }), 'policy.evaluators'],
    [L4({ confidence_probabilities: { low: 0.6, medium: 0.5, high: 0.8 } }), 'policy.confidence_probabilities'],
    [L4({ confidence_probabilities: { low: 0, medium: 0.5, high: 0.8 } }), 'policy.confidence_probabilities.low'],
  ])('given %j, when parsed, then SCHEMA_VIOLATION names %s', (input, field) => {
    const e = refusal(() => parseCouncilPolicy(input));
    expect(e.code).toBe('SCHEMA_VIOLATION');
    expect(e.field).toBe(field);
  });

  it('given an L4 run whose GoalContract names no domain, when started, then it is refused at goal_contract.domain', () => {
    const e = refusal(() => decide(startCommand({ policy: L4() }), { status: 'empty' }));
    expect(e.field).toBe('goal_contract.domain');
  });

  it('given a domain that is not a dotted token, when the GoalContract is parsed, then the field is named', () => {
    const e = refusal(() => decide(startCommand({ goal: goalContract({ domain: 'pay ments' }) }), { status: 'empty' }));
    expect(e.field).toBe('goal_contract.domain');
  });
});

describe('council:L4 run aggregation in the controller (15.2, 15 MUST)', () => {
  it('given Schulze, when a run is driven, then each checkpoint records the aggregation, seeded per checkpoint, and the score is the selected candidate’s', () => {
    const d = run(L4());
    expect(d.state.status).toBe('terminated');
    const [cp] = checkpoints(d.events);
    expect(cp.aggregation?.method).toBe('schulze');
    expect(cp.aggregation?.seed).toBe(`seed-1:${cp.checkpoint_id}`);
    expect(cp.aggregation?.explanation.layers_not_used).toEqual(['capability-estimation', 'outcome-evaluation']);
    const selected = cp.aggregation?.selected as string;
    expect(candidatesLabelled(d.state, 'A')).toContain(selected); // every reviewer put Candidate A first
    expect(cp.score).toBe(cp.scores[selected]);
    expect(cp.aggregation?.tiers[0]).toEqual([selected]);
    const all = checkpoints(d.events);
    for (const k of all) {
      expect(k.aggregation).toMatchObject({ method: 'schulze', seed: `seed-1:${k.checkpoint_id}` });
      expect(k.aggregation?.tiers.flat().sort()).toEqual([...k.candidate_ids].sort());
      expect(k.aggregation?.explanation.steps.length).toBeGreaterThan(0);
    }
    expect(buildRunRecord(d.state as StartedRun).checkpoints.map((k) => k.aggregation)).toEqual(all.map((k) => k.aggregation));
  });

  it('given the same start and seed, when driven twice, then every event is identical (deterministic given the seed)', () => {
    expect(run(L4(), 'seed-x').events).toEqual(run(L4(), 'seed-x').events);
  });

  it('given an aggregation, when the chair is tasked, then it sees the tiers and explanation by blind refs, never a candidate or member id', () => {
    const d = run(L4({ aggregation: 'borda' }));
    const synthesis = d.requests.find((r) => r.stage === 'synthesis');
    const agg = synthesis?.inputs['aggregation'] as { method: string; tiers: string[][]; explanation: { steps: string[] } };
    expect(agg.method).toBe('borda');
    expect(agg.tiers.flat().every((ref) => /^anon-[A-Z]+-v\d+$/.test(ref))).toBe(true);
    expect(agg.tiers[0]).toEqual(['anon-A-v1']);
    const text = JSON.stringify(synthesis?.inputs);
    expect(text).not.toMatch(/cand-/);
    for (const m of panel()) expect(text).not.toContain(m.member_id);
  });

  it('given no aggregation (council:L3), when driven, then checkpoints carry none and the chair’s aggregation input is null', () => {
    const d = drive(startCommand({ goal: domainGoal }), scored);
    expect(checkpoints(d.events)[0].aggregation).toBeUndefined();
    expect(d.requests.find((r) => r.stage === 'synthesis')?.inputs['aggregation']).toBeNull();
  });

  it('given weighted-rubric {evidence: 3, correctness: 1}, when driven, then the checkpoint scores are the weighted means', () => {
    const d = run(L4({ aggregation: { method: 'weighted-rubric', weights: { evidence: 3, correctness: 1 } } }));
    const [cp] = checkpoints(d.events);
    const [a] = candidatesLabelled(d.state, 'A');
    // Candidate A: evidence 5, correctness 3 from every reviewer: (3·5 + 1·3) / 4 = 4.5.
    expect(cp.scores[a]).toBeCloseTo(4.5, 12);
    expect(cp.score).toBeCloseTo(4.5, 12);
  });

  it('given human-decides-after-conflict-map, when the chair decides, then the run ends needs-human-value-choice with the owner named', () => {
    const d = run(L4({ aggregation: 'human-decides-after-conflict-map' }));
    expect(d.state.status === 'terminated' && d.state.terminal.terminal_state).toBe('needs-human-value-choice');
    expect(checkpoints(d.events)[0].aggregation?.human_decision).toMatchObject({ decision_owner: 'human-owner' });
    expect(checkpoints(d.events)[0].aggregation?.selected).toBeNull();
  });

  it('property: for any review scores and seed, the checkpoint score is the cardinal score of the candidate the aggregation selects', () => {
    fc.assert(
      fc.property(
        fc.record({ A: fc.integer({ min: 1, max: 5 }), B: fc.integer({ min: 1, max: 5 }), C: fc.integer({ min: 1, max: 5 }) }),
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.constantFrom('borda', 'schulze', 'ranked-pairs', 'bradley-terry', 'plackett-luce'),
        (scores, seed, method) => {
          const behaviour = defaultBehaviour({ score: (ref) => scores[/^anon-([A-Z]+)-/.exec(ref)?.[1] as 'A' | 'B' | 'C'] });
          const d = drive(startCommand({ goal: domainGoal, policy: L4({ aggregation: method }), seed }), behaviour);
          const [cp] = checkpoints(d.events);
          const selected = cp.aggregation?.selected;
          expect(selected).toBeTruthy();
          expect(cp.score).toBe(cp.scores[selected as string]);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('council:L4 chair selection recorded at the start (14, 16.6)', () => {
  const selection: ChairSelection = {
    policy: 'scoped-capability',
    chair: 'member-chair-02',
    chair_order: ['member-chair-02', 'member-chair-01'],
    exploration: false,
    reason: 'highest lower bound of the synthesizer estimate in payments.migrations',
    scores: [],
  };

  it('given a selection, when the run starts, then the chair order is the selection’s and RunStarted records it', () => {
    const events = decide(
      {
        ...startCommand({ goal: domainGoal, panel: panel({ fallbackChair: true }), policy: L4({ chair_selection: 'scoped-capability' }) }),
        chair_selection: selection,
      } as never,
      { status: 'empty' },
    );
    const started = events[0] as RunStarted;
    expect(started.data.chair_selection).toEqual(selection);
    expect(started.data.policy.chair_order).toEqual(selection.chair_order);
    const state = events.reduce<CouncilRunState>((s, e) => evolveRun(s, e), { status: 'empty' }) as StartedRun;
    expect(buildRunRecord(state).chair_selection).toEqual(selection);
    expect(buildRunRecord(state).domain).toBe('payments.migrations');
  });

  it('given a history where member-chair-02’s model synthesizes better in the domain, when the scoped-capability selection is computed and the run started with it, then it ranks by those scores and RunStarted and the RunRecord carry them', () => {
    const chairs = panel({ fallbackChair: true }).map((m) => (m.member_id === 'member-chair-02' ? { ...m, model_family: 'model-y' } : m));
    const [chair1, chair2] = ['member-chair-01', 'member-chair-02'].map((id) => chairs.find((m) => m.member_id === id) as MemberDescriptor);
    // Synthesizer outcomes in payments.migrations: model-x 2 of 4, model-y 9 of 10.
    const outcomes = (m: MemberDescriptor, successes: number, total: number): CapabilityObservation[] =>
      Array.from({ length: total }, (_, i) => ({
        observation_id: `${m.member_id}:${i}`,
        run_id: `earlier-${i}`,
        at: T0,
        member_id: m.member_id,
        scope: memberScope(m, 'synthesizer', 'payments.migrations'),
        kind: 'outcome',
        success: i < successes ? 1 : 0,
        basis: 'an earlier decision’s outcome',
      }));
    const capabilities = [...outcomes(chair1, 2, 4), ...outcomes(chair2, 9, 10)].reduce(evolveCapabilities, emptyCapabilityProjection());
    const computed = selectChair(
      { policy: 'scoped-capability' },
      { panel: chairs, domain: 'payments.migrations', seed: 'seed-1', capabilities, previous_chairs: [] },
    );
    // Beta(1, 1) updated: 3/6 for model-x, 10/12 for model-y.
    expect(computed.scores.map((x) => [x.member_id, x.observations])).toEqual([
      ['member-chair-01', 4],
      ['member-chair-02', 10],
    ]);
    expect(computed.scores[0].estimate).toBeCloseTo(3 / 6, 12);
    expect(computed.scores[1].estimate).toBeCloseTo(10 / 12, 12);
    expect(computed.scores[1].lower).toBeGreaterThan(computed.scores[0].lower);
    expect(computed.chair_order).toEqual(['member-chair-02', 'member-chair-01']);

    const events = decide(
      {
        ...startCommand({ goal: domainGoal, panel: chairs, policy: L4({ chair_selection: 'scoped-capability' }) }),
        chair_selection: computed,
      } as never,
      { status: 'empty' },
    );
    const started = events[0] as RunStarted;
    expect(started.data.chair_selection?.scores).toEqual(computed.scores);
    expect(started.data.policy.chair_order).toEqual(['member-chair-02', 'member-chair-01']);
    const state = events.reduce<CouncilRunState>((s, e) => evolveRun(s, e), { status: 'empty' }) as StartedRun;
    expect(buildRunRecord(state).chair_selection).toEqual(computed);
  });

  it('given a computed selection and an explicit chair_order together, when the run starts, then SCHEMA_VIOLATION at policy.chair_order and nothing is recorded', () => {
    const e = refusal(() =>
      decide(
        {
          ...startCommand({
            goal: domainGoal,
            panel: panel({ fallbackChair: true }),
            policy: L4({ chair_selection: 'scoped-capability', chair_order: ['member-chair-01'] }),
          }),
          chair_selection: selection,
        } as never,
        { status: 'empty' },
      ),
    );
    expect(e.toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field: 'policy.chair_order' });
  });

  it('given a selection naming a member who does not hold the chair role, when the run starts, then NOT_AUTHORIZED_ROLE', () => {
    const e = refusal(() =>
      decide(
        {
          ...startCommand({ goal: domainGoal, policy: L4() }),
          chair_selection: { ...selection, chair_order: ['member-builder-01'] },
        } as never,
        {
          status: 'empty',
        },
      ),
    );
    expect(e.code).toBe('NOT_AUTHORIZED_ROLE');
  });
});

describe('council:L5 structured outcomes on the run (8.7, 15.4)', () => {
  const ended = () => run(L4({ level: 'council:L5', evaluators: ['qa-bot'] })).state;
  const body = (extra: Record<string, unknown> = {}) => ({
    outcome_id: 'out-1',
    decision_id: 'decision-001',
    observed_at: at(60_000),
    source_kind: 'test-result',
    verdict: 'success',
    actions: [{ action: 'build the ledger projection', status: 'done' }],
    expected_outcomes: [{ expected: 'auditable ledger by Q4', observed: 'met' }],
    summary: 'ledger audited',
    evidence_refs: ['ci-42'],
    ...extra,
  });
  const record = (state: CouncilRunState, actor: string, outcome: unknown) =>
    decide({ type: C.RecordStructuredOutcome, outcome, actor, now: at(120_000) }, state);

  it('given the owner or a named evaluator, when they record, then OutcomeRecorded carries the structured outcome and its recorder role', () => {
    const state = ended();
    const [owner] = record(state, 'human-owner', body());
    expect(owner.type).toBe(E.OutcomeRecorded);
    expect((owner.data as { structured: { recorder_role: string; recorded_by: string } }).structured).toMatchObject({
      recorder_role: 'decision-owner',
      recorded_by: 'human-owner',
    });
    const after = evolveRun(state, owner);
    const [qa] = record(after, 'qa-bot', body({ outcome_id: 'out-2', verdict: 'failure' }));
    expect((qa.data as { structured: { recorder_role: string } }).structured.recorder_role).toBe('evaluator');
    const rec = buildRunRecord(evolveRun(after, qa) as StartedRun);
    expect(rec.outcomes.map((o) => [o.outcome_id, o.source, o.structured?.verdict])).toEqual([
      ['out-1', 'test-result', 'success'],
      ['out-2', 'test-result', 'failure'],
    ]);
  });

  it.each([
    ['a stranger', 'NOT_AUTHORIZED_ROLE', 'mallory', body()],
    ['an owner naming another recorder', 'NOT_AUTHORIZED_ROLE', 'human-owner', body({ recorded_by: 'qa-bot' })],
    ['another decision', 'UNKNOWN_REFERENCE', 'human-owner', body({ decision_id: 'decision-999' })],
    [
      'an action the decision does not have',
      'UNKNOWN_REFERENCE',
      'human-owner',
      body({ actions: [{ action: 'rewrite the UI', status: 'done' }] }),
    ],
  ])('given %s, when recorded, then %s', (_what, code, actor, outcome) => {
    expect(refusal(() => record(ended(), actor, outcome)).code).toBe(code);
  });

  it('given a run without a DecisionRecord yet, when an outcome is recorded, then INVALID_STATE', () => {
    const mid = drive(startCommand({ goal: domainGoal, policy: L4() }), scored, {
      stopWhen: (d) => d.requests.some((r) => r.stage === 'review'),
    });
    expect(refusal(() => record(mid.state, 'human-owner', body())).code).toBe('INVALID_STATE');
  });

  it('given a stranger, when it records an outcome of a run not decided yet, or names a wrong decision, then NOT_AUTHORIZED_ROLE first: the refusal tells it nothing of the run', () => {
    const mid = drive(startCommand({ goal: domainGoal, policy: L4() }), scored, {
      stopWhen: (d) => d.requests.some((r) => r.stage === 'review'),
    });
    for (const [state, outcome] of [
      [mid.state, body()],
      [ended(), body({ decision_id: 'decision-999' })],
      [ended(), { outcome_id: 'x' }],
    ] as const) {
      const refused = refusal(() => record(state, 'mallory', outcome));
      expect(refused.code).toBe('NOT_AUTHORIZED_ROLE');
      expect(refused.message).not.toContain('decision-001');
    }
  });

  it('given the same outcome twice, when recorded, then the second is a duplicate', () => {
    const state = ended();
    const after = evolveRun(state, record(state, 'human-owner', body())[0]);
    expect(record(after, 'human-owner', body())).toEqual([]);
  });
});
