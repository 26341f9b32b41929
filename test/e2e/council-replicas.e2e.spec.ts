import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E, councilRunStream } from '@conclave/council-protocol';
import { ConcurrencyError } from '@conclave/event-log';
import { CouncilTask } from '@conclave/sdk';
import { Identity, Readiness } from '@conclave/service-kit';
import { cleanBehaviour, scriptedArtifact, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { CouncilCommands } from '../../apps/council/src/app/council-commands';
import { RunDriver } from '../../apps/council/src/app/run-driver';
import { RunLeases } from '../../apps/council/src/app/run-lease';
import { RunRepository } from '../../apps/council/src/app/run-repository';
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

  /** Two council replicas (the first test stops one): each one's driver, leases and owner commands. */
  async function twoReplicas() {
    while (c.h.instances.length < 2) await c.h.add('council');
    await eventually(
      async () => (c.h.instances.every((i) => i.app.get(Readiness).report().ready) ? true : undefined),
      10_000,
      'both replicas ready',
    );
    return c.h.instances.map((i) => ({ driver: i.app.get(RunDriver), leases: i.app.get(RunLeases), commands: i.app.get(CouncilCommands) }));
  }

  /** One replica drives the run, the other not. */
  function drivingAndOther(replicas: Awaited<ReturnType<typeof twoReplicas>>, runId: string) {
    const driving = replicas.find((r) => r.driver.drives(runId));
    const other = replicas.find((r) => r !== driving && !r.driver.drives(runId));
    if (!driving || !other) throw new Error('expected one replica driving the run and the other not');
    return { driving, other };
  }

  /** A member's answer to a task (its scripted artifact), as it reaches `RunDriver.answer`. */
  const answerTo = (runId: string, task: CouncilTask, by: ScriptedMember) => ({
    run_id: runId,
    task_id: task.task_id,
    ok: true,
    artifact: scriptedArtifact(task, by.memberId, by.behaviour),
  });

  const owner: Identity = { participant_id: 'human-owner', via: 'declared', state: { status: 'unregistered' } };

  it("given the last proposal appended by the replica not driving the run, when another member's answer to that task reaches the driver before it notices the append, then the answer is refused and the review tasks are issued at once, not at the stage deadline", async () => {
    const replicas = await twoReplicas();
    const proposers = ['rs-builder', 'rs-skeptic', 'rs-operator'];
    // The proposals are answered by the test, each through the replica it chooses.
    const members = c.join({
      ...Object.fromEntries(proposers.map((id) => [id, cleanBehaviour({ delayMs: 50, silent: (t) => t.stage === 'proposal' })])),
      'rs-chair': cleanBehaviour(),
    });
    const all = Object.values(members);
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'rs-chair' }),
      // A deadline far beyond the waits below: only a step on the last answer moves the run on in time.
      policy: { stage_timeout_ms: 30_000 },
    });
    const { driving, other } = drivingAndOther(replicas, runId);
    const tasksOf = (id: string, stage: string) => members[id].tasks.filter((t) => t.run_id === runId && t.stage === stage);
    await ScriptedMember.until(all, () => proposers.every((id) => tasksOf(id, 'proposal').length > 0), 10_000, 'the proposal tasks');
    const [first, second, last] = proposers.map((id) => ({ member: members[id], task: tasksOf(id, 'proposal')[0] }));

    // Two proposals through the driver.
    for (const p of [first, second])
      expect(await driving.driver.answer(p.member.memberId, answerTo(runId, p.task, p.member))).toEqual({ ok: true, retry: false });

    // The driver's notice of appends to this run is held until the refused answer has been decided.
    let noticeHeld = true;
    const held: [string, string][] = [];
    const observed = driving.driver.observed.bind(driving.driver);
    const notices = jest.spyOn(driving.driver, 'observed').mockImplementation((id, eventId) => {
      if (id === runId && noticeHeld) held.push([id, eventId]);
      else observed(id, eventId);
    });
    try {
      // The last proposal, appended by the replica not driving the run (it does not take the run over).
      expect(await other.driver.answer(last.member.memberId, answerTo(runId, last.task, last.member))).toEqual({ ok: true, retry: false });
      expect(other.driver.drives(runId)).toBe(false);
      const seen = driving.driver.stateOf(runId);
      expect(seen?.status === 'running' && seen.tasks[last.task.task_id].status).toBe('issued');

      // Another member answers the last proposer's task, on the driver: refused on the run it re-reads.
      const refused = await driving.driver.answer(first.member.memberId, answerTo(runId, last.task, first.member));
      expect(refused).toMatchObject({ ok: false, retry: false, error: { code: 'NOT_TASK_ASSIGNEE' } });
    } finally {
      noticeHeld = false;
      notices.mockRestore();
      for (const [id, eventId] of held.splice(0)) driving.driver.observed(id, eventId);
    }
    expect(other.driver.drives(runId)).toBe(false);

    // Every proposal is in: the reviews go out now, well before the 30 s stage deadline.
    await ScriptedMember.until(all, () => proposers.every((id) => tasksOf(id, 'review').length > 0), 10_000, 'the review tasks');
    const d = await c.decisions.waitFor(runId, 20_000);
    expect(d.terminal_state).toMatch(/^decided/);
  });

  it("given the chair's final answer taken by the replica not driving the run, when the driver ends the run and releases its lease before that replica takes the lease, then neither replica drives the ended run, both read it terminated and no lease is held", async () => {
    const replicas = await twoReplicas();
    const proposers = ['sa-builder', 'sa-skeptic', 'sa-operator'];
    // The chair's DecisionRecord is sent by the test, through the replica not driving the run.
    const members = c.join({
      ...Object.fromEntries(proposers.map((id) => [id, cleanBehaviour({ delayMs: 50 })])),
      'sa-chair': cleanBehaviour({ silent: (t) => t.stage === 'synthesis' }),
    });
    const chair = members['sa-chair'];
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'sa-chair' }),
    });
    const { driving, other } = drivingAndOther(replicas, runId);
    await chair.until(() => chair.tasks.some((t) => t.run_id === runId && t.stage === 'synthesis'), 20_000, 'the synthesis task');
    const synthesis = chair.tasks.find((t) => t.run_id === runId && t.stage === 'synthesis') as CouncilTask;
    expect(driving.driver.drives(runId)).toBe(true);

    // The other replica's take of the lease, after its append, is slow: it lands once the driver
    // has ended the run (its decision is out) and released the lease.
    const acquire = other.leases.acquire.bind(other.leases);
    let lateTakes = 0;
    const slowTake = jest.spyOn(other.leases, 'acquire').mockImplementation(async (id) => {
      if (id !== runId) return acquire(id);
      await c.decisions.waitFor(runId, 10_000);
      await eventually(
        async () => ((await other.leases.holderOf(runId)) === null ? true : undefined),
        5_000,
        "the driver's lease released",
      );
      lateTakes++;
      return acquire(id);
    });
    try {
      const [verdict, d] = await Promise.all([
        other.driver.answer(chair.memberId, answerTo(runId, synthesis, chair)),
        c.decisions.waitFor(runId, 15_000),
      ]);
      expect(verdict).toEqual({ ok: true, retry: false });
      expect(d.terminal_state).toMatch(/^decided/);
      expect(lateTakes).toBe(1);
      // Right after the answer and the decision: nobody drives the ended run, the owner reads it
      // ended from either replica, and its lease is free.
      const driversNow = replicas.map((r) => r.driver.drives(runId));
      const [terminals, holder] = await Promise.all([
        Promise.all(
          replicas.map(async (r) => (await r.commands.get({ run_id: runId }, owner)).run_record.terminal?.terminal_state ?? 'running'),
        ),
        other.leases.holderOf(runId),
      ]);
      expect({ driversNow, terminals, holder }).toEqual({
        driversNow: [false, false],
        terminals: [d.terminal_state, d.terminal_state],
        holder: null,
      });
      expect(replicas.map((r) => r.driver.activeRuns)).toEqual([0, 0]);
    } finally {
      slowTake.mockRestore();
    }
  });

  it('given answers that keep conflicting on the replica not driving the run, when one runs out of retries, then it is neither recorded nor refused (send it again), and sent again it is recorded once with its spend', async () => {
    const replicas = await twoReplicas();
    const proposers = ['rk-builder', 'rk-skeptic', 'rk-operator'];
    const members = c.join({
      ...Object.fromEntries(proposers.map((id) => [id, cleanBehaviour({ silent: (t) => t.stage === 'proposal' })])),
      'rk-chair': cleanBehaviour(),
    });
    const all = Object.values(members);
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'rk-chair' }),
      policy: { stage_timeout_ms: 30_000 },
    });
    const { other } = drivingAndOther(replicas, runId);
    const member = members['rk-builder'];
    await ScriptedMember.until(
      all,
      () => member.tasks.some((t) => t.run_id === runId && t.stage === 'proposal'),
      10_000,
      'the proposal task',
    );
    const task = member.tasks.find((t) => t.run_id === runId && t.stage === 'proposal')!;
    const answer = { ...answerTo(runId, task, member), usage: { cost: 3, tokens: 30 } };

    // Every append of this answer on the replica not driving the run meets another writer's commit.
    const repo = c.h.instances.map((i) => i.app.get(RunRepository))[replicas.indexOf(other)];
    const append = repo.append.bind(repo);
    const conflicts = jest.spyOn(repo, 'append').mockImplementation(async (id, events, expected, after) => {
      if (id === runId && events.some((e) => e.type === E.CandidateSubmitted))
        throw new ConcurrencyError(councilRunStream(runId), expected, 'unknown');
      return append(id, events, expected, after);
    });
    try {
      await expect(other.driver.answer(member.memberId, answer)).rejects.toMatchObject({ name: 'AnswerNotRecorded' });
    } finally {
      conflicts.mockRestore();
    }
    const before = await c.client.get(runId, 'human-owner');
    expect(before.refusals).toEqual([]);
    expect(before.budgets.usage).toMatchObject({ cost: 0, tokens: 0 });

    // Sent again, it is recorded once, with its spend once.
    expect(await other.driver.answer(member.memberId, answer)).toEqual({ ok: true, retry: false });
    expect(await other.driver.answer(member.memberId, answer)).toEqual({ ok: true, retry: false });
    const after = await c.client.get(runId, 'human-owner');
    expect(after.refusals).toEqual([]);
    expect(after.budgets.usage).toMatchObject({ cost: 3, tokens: 30 });
  });
});
