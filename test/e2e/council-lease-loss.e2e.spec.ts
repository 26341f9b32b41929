import { CouncilTaskRequest } from '@conclave/council-protocol';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { KvEntry } from 'nats';
import { MemberTaskTransport } from '../../apps/council/src/app/member-task-transport';
import { RunDriver } from '../../apps/council/src/app/run-driver';
import { LeaseValue, RunLeases } from '../../apps/council/src/app/run-lease';
import { RunRepository } from '../../apps/council/src/app/run-repository';
import { eventually } from '../support/conclave-harness';
import { CouncilHarness } from '../support/council-harness';

const LEASE_MS = 1_500;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The driving loop's side of the run lease (RunDriver), on two council replicas against the real
 * NATS server: how often the driver renews the lease entry in the KV bucket, and what a replica
 * does when its entry is overwritten by another holder (as a partition would leave it).
 */
describe('Council replicas: the driver renews its run lease and stops when it loses it (JetStream KV)', () => {
  const c = new CouncilHarness({ CONCLAVE_COUNCIL_LEASE_MS: String(LEASE_MS) });
  beforeAll(async () => {
    await c.start();
    await c.h.add('council');
  });
  afterAll(() => c.stop());

  const replicas = () =>
    c.h.instances.map((i) => ({
      driver: i.app.get(RunDriver),
      leases: i.app.get(RunLeases),
      transport: i.app.get(MemberTaskTransport),
      repo: i.app.get(RunRepository),
    }));
  const leaseKv = () => c.h.nc.jetstream().views.kv(replicas()[0].leases.bucketName);

  /**
   * A run whose proposals are held until `release`: every task after them is issued once the test
   * has done its worst. Every task either replica sends for it is recorded, with when. Returns
   * A (driving) and B (not).
   */
  async function heldRun(name: string) {
    jest.restoreAllMocks();
    const proposers = [`${name}-builder`, `${name}-skeptic`, `${name}-operator`];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const members = c.join({
      ...Object.fromEntries(
        proposers.map((id) => [id, cleanBehaviour({ delayMs: 50, hold: (t) => (t.stage === 'proposal' ? gate : undefined) })]),
      ),
      [`${name}-chair`]: cleanBehaviour(),
    });
    const all = Object.values(members);
    const sent = new Map<RunDriver, { at: number; task: CouncilTaskRequest }[]>();
    for (const r of replicas()) {
      sent.set(r.driver, []);
      const publish = r.transport.publishTask.bind(r.transport);
      jest.spyOn(r.transport, 'publishTask').mockImplementation((memberId, request) => {
        sent.get(r.driver)?.push({ at: Date.now(), task: request });
        return publish(memberId, request);
      });
    }
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: `${name}-chair` }),
    });
    const a = replicas().find((r) => r.driver.drives(runId));
    const b = replicas().find((r) => r.driver !== a?.driver && !r.driver.drives(runId));
    if (!a || !b) throw new Error('expected one replica driving the run and the other not');
    await ScriptedMember.until(all, () => all.filter((m) => m.tasks.some((t) => t.run_id === runId)).length === 3, 10_000, 'the proposals');
    const sentBy = (r: typeof a) => (sent.get(r.driver) ?? []).filter((x) => x.task.run_id === runId);
    return { runId, a, b, release, sentBy };
  }

  it('given a run driven by one replica, when time passes, then its lease entry gets a new revision from the same holder about every third of the lease time', async () => {
    const proposers = ['lr-builder', 'lr-skeptic', 'lr-operator'];
    // Nobody answers: the run waits in its first stage, driven, for as long as the test watches.
    c.join(Object.fromEntries([...proposers, 'lr-chair'].map((id) => [id, cleanBehaviour({ silent: () => true })])));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'lr-chair' }),
    });
    const driving = replicas().find((r) => r.driver.drives(runId));
    if (!driving) throw new Error('no replica drives the run');

    const renewals: { revision: number; value: LeaseValue }[] = [];
    const watch = await (await leaseKv()).watch({ key: runId });
    const watched = (async () => {
      for await (const e of watch as AsyncIterable<KvEntry>)
        if (e.operation === 'PUT') renewals.push({ revision: e.revision, value: JSON.parse(decoder.decode(e.value)) as LeaseValue });
    })();
    // The first entry seen is the current one; the nine after it are renewals.
    await eventually(async () => (renewals.length >= 10 ? true : undefined), 10_000, 'ten writes of the lease entry');
    watch.stop();
    await watched;

    const seen = renewals.slice(0, 10);
    expect(new Set(seen.map((r) => r.value.holder))).toEqual(new Set([driving.leases.holder]));
    for (let i = 1; i < seen.length; i++) expect(seen[i].revision).toBeGreaterThan(seen[i - 1].revision);
    // Each write sets expires_at = the holder's now + lease: their spacing is the renewal period.
    const at = seen.map((r) => Date.parse(r.value.expires_at));
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    expect(mean).toBeGreaterThan((LEASE_MS / 3) * 0.7);
    expect(mean).toBeLessThan((LEASE_MS / 3) * 1.3);
    // Never near a lapse: every renewal lands well before the previous expiry.
    expect(Math.max(...gaps)).toBeLessThan(LEASE_MS);
    expect(driving.driver.drives(runId)).toBe(true);

    await c.client.interrupt({ run_id: runId, reason: 'test over', actor: 'human-owner' });
    await c.decisions.waitFor(runId, 10_000);
  });

  it('given a run driven by replica A, when its lease entry is overwritten by replica B (as a partition would leave it), then A stops driving and sends no further task, and B finishes the run, which ends once', async () => {
    const { runId, a, b, release, sentBy } = await heldRun('ll');
    const renewedA: boolean[] = [];
    const renew = a.leases.renew.bind(a.leases);
    jest.spyOn(a.leases, 'renew').mockImplementation(async (lease) => {
      const ok = await renew(lease);
      if (lease.runId === runId) renewedA.push(ok);
      return ok;
    });

    // B's takeover, as it would stand after A was cut off from the KV bucket for a lease time.
    const kv = await leaseKv();
    const overwritten: LeaseValue = { holder: b.leases.holder, expires_at: new Date(Date.now() + LEASE_MS).toISOString() };
    await kv.put(runId, encoder.encode(JSON.stringify(overwritten)));

    await eventually(async () => (a.driver.drives(runId) ? undefined : true), 5_000, 'A to stop driving the run');
    expect(renewedA).toContain(false);
    const sentByA = sentBy(a).length;
    await eventually(async () => (b.driver.drives(runId) ? true : undefined), 5_000, 'B to drive the run');
    release();

    const d = await c.decisions.waitFor(runId, 15_000);
    expect(d.terminal_state).toMatch(/^decided/);
    await eventually(async () => ((await b.leases.holderOf(runId)) === null ? true : undefined), 5_000, 'the lease released');
    expect(a.driver.drives(runId)).toBe(false);
    // A sent the proposals only; every task after them came from B.
    expect(sentBy(a)).toHaveLength(sentByA);
    expect(sentByA).toBe(3);
    const stagesByB = new Set(
      sentBy(b)
        .filter((x) => x.task.stage !== 'proposal')
        .map((x) => x.task.stage),
    );
    expect([...stagesByB]).toEqual(expect.arrayContaining(['review', 'synthesis']));
    expect(c.decisions.received.filter((x) => x.run_id === runId)).toHaveLength(1);
  });
  it('given a run driven by replica A, when A can no longer reach the lease bucket (its writes hang, then time out), then A stops driving before the lease it last wrote expires and sends no further task, and B takes the run over and finishes it, which ends once', async () => {
    const { runId, a, b, release, sentBy } = await heldRun('lh');

    // A is cut off from the bucket: its lease writes wait, then fail as a request timeout does.
    const timesOut = () => new Promise<never>((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), LEASE_MS * 3));
    const renew = jest.spyOn(a.leases, 'renew').mockImplementation(timesOut);
    const acquire = jest.spyOn(a.leases, 'acquire').mockImplementation(timesOut);
    try {
      await eventually(async () => (a.driver.drives(runId) ? undefined : true), LEASE_MS * 2, 'A to stop driving the run');
      const stoppedAt = Date.now();
      // The entry as A stops is A's last write that landed (a renewal on its way at the cut
      // included): still A's, not yet expired. Had A stopped late, B could hold it already.
      const entry = await (await leaseKv()).get(runId);
      const last = JSON.parse(decoder.decode(entry?.value)) as LeaseValue;
      expect(last.holder).toBe(a.leases.holder);
      expect(stoppedAt).toBeLessThan(Date.parse(last.expires_at));
      await eventually(async () => (b.driver.drives(runId) ? true : undefined), LEASE_MS * 4, 'B to drive the run');
      const taken = await b.leases.holderOf(runId);
      expect(taken?.holder).toBe(b.leases.holder);
      release();

      const d = await c.decisions.waitFor(runId, 15_000);
      expect(d.terminal_state).toMatch(/^decided/);
      // A sent the three proposal tasks before the cut and nothing after it stopped; B sent the rest.
      expect(sentBy(a)).toHaveLength(3);
      expect(sentBy(a).every((x) => x.at < stoppedAt)).toBe(true);
      expect(sentBy(b).length).toBeGreaterThan(0);
      expect(a.driver.drives(runId)).toBe(false);
      expect(c.decisions.received.filter((x) => x.run_id === runId)).toHaveLength(1);
    } finally {
      renew.mockRestore();
      acquire.mockRestore();
    }
  });
  it("given replica A driving two runs, when the renewal of one run's lease gets no reply, then that run's lease lapses while the other's is renewed on time and A keeps driving it", async () => {
    jest.restoreAllMocks();
    const proposers = ['lt-builder', 'lt-skeptic', 'lt-operator'];
    c.join(Object.fromEntries([...proposers, 'lt-chair'].map((id) => [id, cleanBehaviour({ silent: () => true })])));
    // Three runs on two replicas: one replica drives two of them.
    const runs: string[] = [];
    for (let i = 0; i < 3; i++)
      runs.push(await c.client.start({ goal_contract: scriptedGoalContract(), panel: scriptedPanel({ proposers, chair: 'lt-chair' }) }));
    const a = replicas().find((r) => runs.filter((id) => r.driver.drives(id)).length >= 2);
    if (!a) throw new Error('expected one replica driving two of the three runs');
    const [stalled, healthy] = runs.filter((id) => a.driver.drives(id));

    const renew = a.leases.renew.bind(a.leases);
    jest
      .spyOn(a.leases, 'renew')
      .mockImplementation((lease) =>
        lease.runId === stalled
          ? new Promise<never>((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), LEASE_MS * 3))
          : renew(lease),
      );
    jest.spyOn(a.leases, 'acquire').mockImplementation(async (runId) => {
      if (runId === stalled) throw new Error('TIMEOUT');
      throw new Error(`unexpected acquire of ${runId}`);
    });
    const writes: LeaseValue[] = [];
    const watch = await (await leaseKv()).watch({ key: healthy });
    const watched = (async () => {
      for await (const e of watch as AsyncIterable<KvEntry>)
        if (e.operation === 'PUT') writes.push(JSON.parse(decoder.decode(e.value)) as LeaseValue);
    })();

    await eventually(async () => (a.driver.drives(stalled) ? undefined : true), LEASE_MS * 2, 'the stalled run to lapse');
    // The other lease renewed three times while the stalled renewal still waits for its reply (it
    // times out three lease times after it was sent).
    await eventually(async () => (writes.length - 1 >= 3 ? true : undefined), LEASE_MS * 1.5, 'three renewals of the other lease');
    watch.stop();
    await watched;
    expect(a.driver.drives(healthy)).toBe(true);
    // The first entry seen is the one current when the watch began; every later one is a renewal by A.
    expect(new Set(writes.map((w) => w.holder))).toEqual(new Set([a.leases.holder]));
    expect(writes.length - 1).toBeGreaterThanOrEqual(3);

    jest.restoreAllMocks();
    for (const id of runs) await c.client.interrupt({ run_id: id, reason: 'test over', actor: 'human-owner' });
    for (const id of runs) await c.decisions.waitFor(id, 15_000);
  });
  it("given a run driven by replica A whose renewal lands only after the lease's deadline passed, when it lands, then A gives the renewed lease back at once and B drives the run", async () => {
    const { runId, a, b, release } = await heldRun('lr2');
    const renew = a.leases.renew.bind(a.leases);
    let landed!: () => void;
    const late = new Promise<void>((r) => (landed = r));
    // The next renewal of this run is written to the bucket only after the deadline has passed.
    jest.spyOn(a.leases, 'renew').mockImplementation(async (lease) => {
      if (lease.runId !== runId) return renew(lease);
      await new Promise((r) => setTimeout(r, LEASE_MS * 1.2));
      const ok = await renew(lease);
      landed();
      return ok;
    });
    jest.spyOn(a.leases, 'acquire').mockImplementation(async () => {
      throw new Error('TIMEOUT');
    });
    // B cannot take the run until the late renewal has landed: what A does with it decides.
    const acquire = b.leases.acquire.bind(b.leases);
    jest.spyOn(b.leases, 'acquire').mockImplementation(async (id) => {
      if (id === runId) await late;
      return acquire(id);
    });

    await eventually(async () => (a.driver.drives(runId) ? undefined : true), LEASE_MS * 2, 'A to stop driving the run');
    await late;
    // Given back: the entry the late renewal wrote is gone, not A's for another lease time.
    await eventually(
      async () => ((await a.leases.holderOf(runId))?.holder === a.leases.holder ? undefined : true),
      LEASE_MS / 3,
      'the late renewal given back',
    );
    await eventually(async () => (b.driver.drives(runId) ? true : undefined), LEASE_MS * 2, 'B to drive the run');
    release();
    const d = await c.decisions.waitFor(runId, 15_000);
    expect(d.terminal_state).toMatch(/^decided/);
    expect(a.driver.drives(runId)).toBe(false);
    expect(c.decisions.received.filter((x) => x.run_id === runId)).toHaveLength(1);
    jest.restoreAllMocks();
  });
  it("given replica A whose append issuing the next stage's tasks is still on its way when its lease lapses, when that append lands, then A sends none of those tasks and B, taking the run over, sends them", async () => {
    const { runId, a, b, release, sentBy } = await heldRun('la');
    const timesOut = () => new Promise<never>((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), LEASE_MS * 3));
    let landAppend!: () => void;
    const appendGate = new Promise<void>((r) => (landAppend = r));
    let appendLanded!: () => void;
    const landed = new Promise<void>((r) => (appendLanded = r));
    let held = false;
    let appendedInLog = false;
    const append = a.repo.append.bind(a.repo);
    // A's append of the next stage's tasks is held; A is cut off from the lease bucket as it starts.
    jest.spyOn(a.repo, 'append').mockImplementation(async (id, events, expected, after) => {
      if (id !== runId || held || !events.some((e) => e.type === 'TaskIssued')) return append(id, events, expected, after);
      held = true;
      jest.spyOn(a.leases, 'renew').mockImplementation(timesOut);
      jest.spyOn(a.leases, 'acquire').mockImplementation(timesOut);
      await appendGate;
      try {
        const result = await append(id, events, expected, after);
        appendedInLog = true;
        return result;
      } finally {
        appendLanded();
      }
    });
    // B cannot take the run until A's append has landed.
    const acquire = b.leases.acquire.bind(b.leases);
    jest.spyOn(b.leases, 'acquire').mockImplementation(async (id) => {
      if (id === runId) await landed;
      return acquire(id);
    });

    release();
    await eventually(async () => (held ? true : undefined), 10_000, "A's append of the next tasks");
    await eventually(async () => (a.driver.drives(runId) ? undefined : true), LEASE_MS * 2, 'A to stop driving the run');
    const stoppedAt = Date.now();
    landAppend();
    await landed;
    // The log took it: the tasks are issued, and it is for the run's next driver to send them.
    expect(appendedInLog).toBe(true);

    const d = await c.decisions.waitFor(runId, 15_000);
    expect(d.terminal_state).toMatch(/^decided/);
    // A sent the three proposal tasks and nothing after; the review tasks its append issued came from B.
    expect(sentBy(a)).toHaveLength(3);
    expect(sentBy(a).every((x) => x.at < stoppedAt)).toBe(true);
    expect(sentBy(b).some((x) => x.task.stage === 'review')).toBe(true);
    expect(c.decisions.received.filter((x) => x.run_id === runId)).toHaveLength(1);
    jest.restoreAllMocks();
  });
});
