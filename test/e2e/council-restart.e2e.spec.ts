import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';

/**
 * Kill-and-restart: the controller is closed mid-run while a reviewer is still working; a new
 * instance folds the log, resends only the unanswered tasks (same task ids, deduplicated by the
 * member's durable queue) and finishes the run. No task answered before the kill is ever asked
 * again, and the review in progress reaches the new controller without being asked twice.
 */
describe('Council controller restart mid-run (apps/council over NATS)', () => {
  const c = new CouncilHarness();
  beforeAll(() => c.start());
  afterAll(() => c.stop());

  it('given a run killed during review, when a new controller starts, then the run completes and no answered task is re-sent', async () => {
    const proposers = ['rs-builder', 'rs-skeptic', 'rs-operator'];
    const slow = 'rs-operator';
    const members = c.join({
      ...Object.fromEntries(
        proposers.map((id) => [id, cleanBehaviour(id === slow ? { delayMs: (t) => (t.stage === 'review' ? 700 : 0) } : {})]),
      ),
      'rs-chair': cleanBehaviour(),
    });
    const all = () => Object.values(members) as ScriptedMember[];
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'rs-chair' }),
      policy: { stage_timeout_ms: 8_000 },
    });

    await members[slow].until(() => members[slow].tasks.some((t) => t.stage === 'review'), 10_000, 'the slow review to start');
    const okStages = () => all().flatMap((m) => m.verdicts.filter((v) => v.verdict.ok).map((v) => v.task.stage));
    const fastReviewed = () =>
      okStages().filter((s) => s === 'proposal').length === 3 && okStages().filter((s) => s === 'review').length === 2;
    await ScriptedMember.until(all(), fastReviewed, 10_000, 'the proposals and the fast reviews to be accepted');
    const answered = new Set(all().flatMap((m) => m.verdicts.filter((v) => v.verdict.ok).map((v) => v.task.task_id)));
    await c.h.kill(c.h.instances[0]);
    await c.h.add('council');

    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);
    expect(answered.size).toBe(5);
    const counts = new Map(all().flatMap((m) => [...m.requests]));
    for (const id of answered) expect([id, counts.get(id)]).toEqual([id, 1]);
    // The review in progress at the kill: its handler ran once, and its answer (sent again from
    // the member's cache if it found no controller) was accepted by the new one.
    const slowReview = [...members[slow].requests].find(([id]) => id.includes(':review:'));
    expect(slowReview?.[1]).toBe(1);
    expect(members[slow].verdicts.some((v) => v.task.task_id === slowReview?.[0] && v.verdict.ok)).toBe(true);
    const run = await c.client.get(runId);
    expect(run.terminal?.terminal_state).toBe(d.terminal_state);
  });
});
