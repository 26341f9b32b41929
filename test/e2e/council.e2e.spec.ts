import { CouncilRequestError } from '@conclave/sdk';
import {
  ScriptedBehaviour,
  ScriptedMember,
  cleanBehaviour,
  frameChallengerBehaviour,
  oscillatingBehaviour,
  relentlessBehaviour,
  scriptedGoalContract,
  scriptedPanel,
  valueConflictBehaviour,
} from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';

/**
 * The Council controller end to end: apps/council booted for real against the real NATS server,
 * scripted members answering on `<prefix>.v1.tasks.<member_id>`, decisions read from the
 * COUNCIL_DECISIONS stream. Stage timeouts are short so that timeouts cost little.
 */
describe('Council end to end (apps/council + scripted members over NATS)', () => {
  const c = new CouncilHarness();
  let n = 0;

  beforeAll(() => c.start());
  afterAll(() => c.stop());
  afterEach(() => c.stopMembers());

  /** Unique member ids per test: `<tag>-builder` ... and `<tag>-chair`. */
  function panelOf(tag: string, opts: { frameObserver?: boolean; proposers?: number } = {}) {
    const lenses = ['builder', 'skeptic', 'operator', 'economist', 'security'];
    const proposers = lenses.slice(0, opts.proposers ?? 3).map((l) => `${tag}-${l}`);
    const chair = `${tag}-chair`;
    const observer = opts.frameObserver ? `${tag}-outsider` : undefined;
    return { proposers, chair, observer, panel: scriptedPanel({ proposers, chair, frameObserver: observer }) };
  }

  function join(ids: string[], behaviour: (id: string) => ScriptedBehaviour): Record<string, ScriptedMember> {
    return c.join(Object.fromEntries(ids.map((id) => [id, behaviour(id)])));
  }

  const policy = (extra: Record<string, unknown> = {}) => ({ stage_timeout_ms: 3_000, ...extra });
  const tag = () => `t${++n}`;

  it('a clean decision: proposal → blind review → conflict map → revision → review → chair; decided, each task sent once', async () => {
    const p = panelOf(tag());
    const members = join([...p.proposers, p.chair], () => cleanBehaviour());
    const runId = await c.client.start({ goal_contract: scriptedGoalContract(), panel: p.panel, policy: policy() });
    const d = await c.decisions.waitFor(runId);
    expect(d).toMatchObject({ run_id: runId, terminal_state: 'decided', reason: 'decision-recorded', goal_contract_id: 'gc-001' });
    const record = d.decision_record as {
      grounded_in: string[];
      decision_owner: string;
      decision: string;
      actions: string[];
      unresolved_dissent: unknown[];
      stop_loss_conditions: string[];
      reversal_signals: string[];
    };
    expect(record.decision_owner).toBe('human-owner');
    // The final output: a decision, its dissent (none left here), actions and reversal/stop-loss.
    expect(record.decision).toEqual(expect.any(String));
    expect(record.unresolved_dissent).toEqual([]);
    expect(record.actions.length).toBeGreaterThan(0);
    expect(record.stop_loss_conditions.length + record.reversal_signals.length).toBeGreaterThan(0);
    expect(record.grounded_in.every((ref) => !ref.startsWith('anon-'))).toBe(true);

    const run = await c.client.get(runId, 'human-owner');
    expect(run.rounds.map((r) => r.stop_reason ?? r.decision)).toEqual(['revise', 'all-material-issues-resolved-or-retained']);
    expect(run.anonymization.mapping).toHaveLength(3);
    // Anyone else's copy (with authentication off, any declared reader) omits the mapping.
    expect((await c.client.get(runId)).anonymization).toEqual({ restricted: true, withheld: true, mapping: [] });
    // Independence and blindness, on the bodies the members actually received.
    const all = Object.values(members).flatMap((m) => m.tasks);
    const proposalTasks = all.filter((x) => x.stage === 'proposal');
    expect(proposalTasks).toHaveLength(3);
    for (const t of proposalTasks) {
      // Only the GoalContract: no candidate (stamped ids are task ids, blind refs are anon-…).
      expect(Object.keys(t.inputs)).toEqual(['goal_contract']);
      expect(JSON.stringify(t.inputs)).not.toMatch(/anon-|:proposal:/);
    }
    // The revision round is targeted: each proposer is asked about the issues selected on its own candidate.
    const revisionTasks = all.filter((x) => x.stage === 'revision');
    expect(revisionTasks.map((t) => t.task_id.split(':').pop()).sort()).toEqual([...p.proposers].sort());
    for (const t of revisionTasks) expect((t.inputs['selected_issues'] as unknown[]).length).toBeGreaterThan(0);
    for (const t of all.filter((x) => x.stage === 'review')) {
      const text = JSON.stringify(t.inputs);
      for (const id of [...p.proposers, p.chair]) expect(text).not.toContain(id);
    }
    for (const m of Object.values(members)) for (const count of m.requests.values()) expect(count).toBe(1);
  });

  it('one member timing out: the run goes on degraded, and the DecisionRecord labels the missing member', async () => {
    const p = panelOf(tag());
    const silent = p.proposers[2];
    join([...p.proposers, p.chair], (id) => cleanBehaviour(id === silent ? { silent: (t) => t.stage === 'proposal' } : {}));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: p.panel,
      policy: policy({ stage_timeout_ms: 2_000, stage_timeouts_ms: { synthesis: 3_000 } }),
    });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);
    const record = d.decision_record as {
      member_failures: { member_id: string; reason: string; stage: string }[];
      missing_perspectives: string[];
    };
    expect(record.member_failures).toEqual([expect.objectContaining({ member_id: silent, reason: 'timeout', stage: 'proposal' })]);
    expect(record.missing_perspectives.join(' ')).toContain(silent);
    const run = await c.client.get(runId);
    expect(run.failures).toEqual([expect.objectContaining({ member_id: silent, reason: 'timeout' })]);
    expect(run.degraded_modes.length).toBeGreaterThan(0);
  });

  it('budget exhausted: new objections every round until max_rounds; the best checkpoint is returned', async () => {
    const p = panelOf(tag());
    join([...p.proposers, p.chair], () => relentlessBehaviour());
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ budget: { max_rounds: 2, max_time: '2m' } }),
      panel: p.panel,
      policy: policy(),
    });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toBe('budget-exhausted-best-checkpoint');
    expect(d.best_checkpoint_id).toEqual(expect.any(String));
    const run = await c.client.get(runId);
    expect(run.rounds.at(-1)?.stop_reason).toBe('max-rounds');
    expect(run.best_checkpoint_id).toBe(d.best_checkpoint_id);
    expect(run.checkpoints.map((k) => k.checkpoint_id)).toContain(d.best_checkpoint_id);
  });

  it('oscillation: revisions flip A→B→A; the run stops and keeps both positions with the discriminating evidence', async () => {
    const p = panelOf(tag());
    join([...p.proposers, p.chair], () => oscillatingBehaviour());
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ budget: { max_rounds: 5, max_time: '2m' } }),
      panel: p.panel,
      policy: policy(),
    });
    const d = await c.decisions.waitFor(runId);
    const run = await c.client.get(runId);
    expect(run.rounds.at(-1)?.stop_reason).toBe('oscillation');
    const osc = run.rounds.flatMap((r) => r.signals).find((s) => s.signal === 'oscillation');
    expect(osc && osc.signal === 'oscillation' && osc.positions).toHaveLength(2);
    expect(osc && osc.signal === 'oscillation' && osc.discriminating_evidence).toContain('a replay of last month of traffic');
    expect(d.terminal_state).toMatch(/^decided/);
  });

  it('a value conflict: no revision round, the run ends needs-human-value-choice', async () => {
    const p = panelOf(tag());
    join([...p.proposers, p.chair], (id) => (id === p.chair ? valueConflictBehaviour() : cleanBehaviour()));
    const runId = await c.client.start({ goal_contract: scriptedGoalContract(), panel: p.panel, policy: policy() });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toBe('needs-human-value-choice');
    const run = await c.client.get(runId);
    expect(run.rounds[0].stop_reason).toBe('value-choice-required');
    expect(run.tasks.filter((t) => t.stage === 'revision')).toHaveLength(0);
  });

  it('too few members: two of three proposers never come; their tasks wait until the stage deadline; failed-below-quorum, no synthesis', async () => {
    const p = panelOf(tag());
    join([p.proposers[0], p.chair], () => cleanBehaviour());
    const runId = await c.client.start({ goal_contract: scriptedGoalContract(), panel: p.panel, policy: policy() });
    const d = await c.decisions.waitFor(runId);
    expect(d).toMatchObject({ terminal_state: 'failed-below-quorum', decision_record: null });
    const run = await c.client.get(runId);
    expect(run.failures.map((f) => f.member_id).sort()).toEqual([p.proposers[1], p.proposers[2]].sort());
    // A member not listening is not a failure at once (its task waits in its durable queue): it times out.
    expect(run.failures.every((f) => f.reason === 'timeout')).toBe(true);
  });

  it('a frame challenge accepted by the owner revises the GoalContract and restarts the proposal stage', async () => {
    const p = panelOf(tag(), { frameObserver: true });
    const observerId = p.observer ?? 'missing-observer';
    const members = join([...p.proposers, p.chair, observerId], (id) =>
      id === observerId ? frameChallengerBehaviour('gc-001') : cleanBehaviour(),
    );
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: p.panel,
      policy: policy({ stage_timeouts_ms: { 'frame-decision': 20_000 } }),
    });
    const observer = members[observerId];
    await observer.until(
      () => observer.verdicts.some((v) => v.task.stage === 'frame-check' && v.verdict.ok),
      10_000,
      'the frame challenge to be recorded',
    );
    const revised = scriptedGoalContract({
      goal_contract_id: 'gc-002',
      success_criteria: ['no billing downtime', 'auditable ledger', 'auditor sign-off'],
    });
    await c.client.reviseGoalContract({ run_id: runId, goal_contract: revised, frame_check_id: 'fc-1', actor: 'human-owner' });
    const d = await c.decisions.waitFor(runId);
    expect(d.goal_contract_id).toBe('gc-002');
    expect(d.terminal_state).toMatch(/^decided/);
    const run = await c.client.get(runId);
    expect(run.goal_contract_revisions.at(-1)).toMatchObject({ frame_check_id: 'fc-1', comparable: false, restarted: true });
    const proposals = members[p.proposers[0]].tasks.filter((t) => t.stage === 'proposal').map((t) => t.goal_contract.goal_contract_id);
    expect(proposals).toEqual(['gc-001', 'gc-002']);
  });

  it('a human interrupt stops a waiting run at once (budget-exhausted-best-checkpoint, human-interrupt); a later outcome is recorded', async () => {
    const p = panelOf(tag());
    const members = join([...p.proposers, p.chair], () => cleanBehaviour({ silent: (t) => t.stage === 'review' }));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: p.panel,
      policy: policy({ stage_timeout_ms: 30_000 }),
    });
    const all = Object.values(members);
    await ScriptedMember.until(
      all,
      () => all.flatMap((m) => m.tasks).filter((t) => t.stage === 'review').length === 3,
      10_000,
      'the reviews to be sent',
    );
    await c.client.interrupt({ run_id: runId, reason: 'owner stopped the run', actor: 'human-owner' });
    const d = await c.decisions.waitFor(runId);
    expect(d).toMatchObject({
      terminal_state: 'budget-exhausted-best-checkpoint',
      reason: 'human-interrupt',
      note: 'owner stopped the run',
      decision_record: null,
    });
    await c.client.recordOutcome({
      run_id: runId,
      actor: 'human-owner',
      outcome: { outcome_id: 'o-1', observed_at: new Date().toISOString(), summary: 'migration postponed', source: 'ops review' },
    });
    const run = await c.client.get(runId);
    expect(run.outcomes).toEqual([expect.objectContaining({ outcome_id: 'o-1', summary: 'migration postponed' })]);
    await expect(c.client.interrupt({ run_id: runId, reason: 'again', actor: 'human-owner' })).rejects.toMatchObject({
      code: 'INVALID_STATE',
    });
  });

  it('single-letter member ids (A, B, C, D): blind refs stay intact, every review is accepted, the run decides', async () => {
    const proposers = ['A', 'B', 'C'];
    const members = join([...proposers, 'D'], () => cleanBehaviour());
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'D' }),
      policy: policy(),
    });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);
    const reviews = Object.values(members)
      .flatMap((m) => m.verdicts)
      .filter((v) => v.task.stage === 'review');
    expect(reviews.length).toBeGreaterThan(0);
    expect(reviews.every((v) => v.verdict.ok)).toBe(true);
    // The blind refs the reviewers received are intact (no letter taken for a member id).
    for (const t of Object.values(members)
      .flatMap((m) => m.tasks)
      .filter((x) => x.stage === 'review'))
      for (const cand of t.inputs['candidates'] as { candidate_ref: string }[]) expect(cand.candidate_ref).toMatch(/^anon-[A-Z]+-v\d+$/);
    const run = await c.client.get(runId, 'human-owner');
    expect(run.refusals).toEqual([]);
  });

  it('a refused artifact never corrected: the RunRecord keeps the refusal and its spend, and the timeout names it', async () => {
    const p = panelOf(tag());
    const bad = p.proposers[2];
    join([...p.proposers, p.chair], (id) =>
      cleanBehaviour(id === bad ? { malformed: (t) => t.stage === 'proposal', usage: { cost: 2, tokens: 50 } } : {}),
    );
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: p.panel,
      policy: policy({ stage_timeout_ms: 2_000, stage_timeouts_ms: { synthesis: 3_000 } }),
    });
    await c.decisions.waitFor(runId);
    const run = await c.client.get(runId, 'human-owner');
    expect(run.refusals).toEqual([
      expect.objectContaining({ member_id: bad, stage: 'proposal', error: expect.objectContaining({ code: 'SCHEMA_VIOLATION' }) }),
    ]);
    expect(run.failures).toEqual([
      expect.objectContaining({ member_id: bad, reason: 'timeout', detail: expect.stringMatching(/refused answer/) }),
    ]);
    expect(run.budgets.usage.cost).toBeGreaterThanOrEqual(2);
  });

  it('a refused command: a bad GoalContract gets {ok: false, error: {code, field}} and starts nothing', async () => {
    const p = panelOf(tag());
    const bad = { ...scriptedGoalContract(), budget: { max_rounds: 0, max_time: '1m' } };
    const runId = `refused_${p.chair.replace(/-/g, '_')}`;
    await expect(c.client.start({ goal_contract: bad, panel: p.panel, run_id: runId })).rejects.toMatchObject({
      code: 'SCHEMA_VIOLATION',
      field: 'goal_contract.budget.max_rounds',
    });
    // Nothing was started under the refused command's run id.
    await expect(c.client.get(runId, 'human-owner')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    await expect(c.client.get('no_such_run')).rejects.toBeInstanceOf(CouncilRequestError);
  });
});
