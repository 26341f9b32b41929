import { COUNCIL_COMMAND_TYPES as C } from '@conclave/council-protocol';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { RunDriver } from '../../apps/council/src/app/run-driver';
import { RunLeases } from '../../apps/council/src/app/run-lease';
import { eventually } from '../support/conclave-harness';
import { CouncilHarness } from '../support/council-harness';

/**
 * Two council replicas (as the Kubernetes manifests run them): a run's lease lets only one drive
 * it; a command reaching the other replica is appended but does not make it a second driver; when
 * the driving replica stops, the other takes the run over and finishes it.
 */
describe('Council replicas: one driver per run (lease in JetStream KV)', () => {
  const c = new CouncilHarness({ CONCLAVE_COUNCIL_LEASE_MS: '1500' });
  beforeAll(async () => {
    await c.start();
    await c.h.add('council');
  });
  afterAll(() => c.stop());

  it('given two replicas and a command on the one not driving, then no task is sent twice; when the driver stops, the other finishes the run', async () => {
    const proposers = ['rp-builder', 'rp-skeptic', 'rp-operator'];
    const members = c.join({
      ...Object.fromEntries(proposers.map((id) => [id, cleanBehaviour({ delayMs: (t) => (t.stage === 'review' ? 400 : 50) })])),
      'rp-chair': cleanBehaviour(),
    });
    const all = () => Object.values(members) as ScriptedMember[];
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'rp-chair' }),
      policy: { stage_timeout_ms: 8_000 },
    });
    const drivers = c.h.instances.map((i) => i.app.get(RunDriver));
    const driving = drivers.findIndex((d) => d.drives(runId));
    expect(driving).toBeGreaterThanOrEqual(0);
    const other = drivers[1 - driving];
    const survivorLeases = c.h.instances[1 - driving].app.get(RunLeases);
    expect(await c.h.instances[0].app.get(RunLeases).holderOf(runId)).toMatchObject({
      holder: c.h.instances[driving].app.get(RunLeases).holder,
    });

    // A command reaching the replica that does not drive the run: appended, and still one driver.
    await other.execute(runId, (_s, now) => ({
      type: C.RecordOutcome,
      outcome: { outcome_id: 'o-early', observed_at: now, summary: 'noted mid-run', source: 'test' },
      actor: 'human-owner',
      now,
    }));
    expect(other.drives(runId)).toBe(false);

    await ScriptedMember.until(
      all(),
      () =>
        all()
          .flatMap((m) => m.verdicts)
          .filter((v) => v.verdict.ok && v.task.stage === 'review').length >= 1,
      10_000,
      'a review to be accepted',
    );
    const answeredBeforeKill = new Set(all().flatMap((m) => m.verdicts.filter((v) => v.verdict.ok).map((v) => v.task.task_id)));
    const seenBeforeKill = new Set(all().flatMap((m) => [...m.requests.keys()]));
    await c.h.kill(c.h.instances[driving]);
    const d = await c.decisions.waitFor(runId, 20_000);
    expect(d.terminal_state).toMatch(/^decided/);
    expect(other.drives(runId)).toBe(false);
    // The command the other replica took is in the run's log; the ended run's lease is released.
    expect((await c.client.get(runId, 'human-owner')).outcomes.map((o) => o.outcome_id)).toEqual(['o-early']);
    await eventually(async () => ((await survivorLeases.holderOf(runId)) === null ? true : undefined), 10_000, 'the lease released');
    // Only a task in flight at the handover may be sent again; answered and later tasks once each.
    const counts = new Map(all().flatMap((m) => [...m.requests]));
    expect(answeredBeforeKill.size).toBeGreaterThan(3);
    for (const id of answeredBeforeKill) expect([id, counts.get(id)]).toEqual([id, 1]);
    for (const [id, count] of counts) if (!seenBeforeKill.has(id)) expect([id, count]).toEqual([id, 1]);
  });
});
