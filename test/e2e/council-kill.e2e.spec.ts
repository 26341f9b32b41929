import { acpStreamNames } from '@conclave/messaging';
import { CouncilClient, type CouncilDecisionMessage } from '@conclave/sdk';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { connect, type NatsConnection } from 'nats';
import { eventually, NATS_URL } from '../support/conclave-harness';
import { ServiceProcesses } from '../support/processes';

const RUNS = 12;
const KILLS = 2;

/**
 * Two council replicas as processes (as Kubernetes runs them), a burst of concurrent runs, and a
 * replica killed with SIGKILL mid-burst, twice, each replaced by a fresh process: the decision
 * outbox and the run index resume from what they saved, the surviving replica takes the killed
 * one's runs over once their leases expire, and every run's end is on COUNCIL_DECISIONS once.
 */
describe('council replicas killed during a burst of runs: every decision published once', () => {
  let svc: ServiceProcesses | undefined;
  let nc: NatsConnection | undefined;
  const members: ScriptedMember[] = [];

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await svc?.stop().catch(() => undefined);
    if (nc && svc) {
      const jsm = await nc.jetstreamManager();
      for await (const s of jsm.streams.list())
        if (s.config.name.includes(svc.run)) await jsm.streams.delete(s.config.name).catch(() => undefined);
      await nc.drain();
    }
  });

  it(`given ${RUNS} concurrent runs on two council processes, when one is killed with SIGKILL ${KILLS} times and replaced, then every run ends and its decision is published exactly once`, async () => {
    // Given
    svc = new ServiceProcesses(NATS_URL, undefined, { CONCLAVE_COUNCIL_LEASE_MS: '1500' });
    await svc.start('council', 'council');
    const conn = await connect({ servers: NATS_URL });
    nc = conn;
    const prefix = svc.env['CONCLAVE_COUNCIL_PREFIX'];
    const proposers = ['ck-builder', 'ck-skeptic', 'ck-operator'];
    // Slow enough that runs are mid-flight at each kill.
    for (const id of [...proposers, 'ck-chair'])
      members.push(new ScriptedMember(conn, id, cleanBehaviour({ delayMs: 150 }), prefix).start());
    const stream = acpStreamNames(svc.run).councilDecisions;
    const received: CouncilDecisionMessage[] = [];
    const feed = await (await conn.jetstream().consumers.get(stream)).consume();
    void (async () => {
      for await (const m of feed) received.push(m.json<CouncilDecisionMessage>());
    })();
    const client = new CouncilClient(conn, prefix);

    // When: the burst, and the kills while it runs
    const runIds = await Promise.all(
      Array.from({ length: RUNS }, () =>
        client.start({
          goal_contract: scriptedGoalContract(),
          panel: scriptedPanel({ proposers, chair: 'ck-chair' }),
          policy: { stage_timeout_ms: 8_000 },
        }),
      ),
    );
    for (let k = 1; k <= KILLS; k++) {
      await eventually(async () => (received.length >= (k * RUNS) / (KILLS + 2) ? true : undefined), 60_000, `decision ${k} of the burst`);
      const killed = await svc.kill('council', 'SIGKILL');
      expect(killed.signal).toBe('SIGKILL');
      await svc.restart('council');
    }

    // Then
    const ids = new Set(runIds);
    await eventually(
      async () => (runIds.every((id) => received.some((d) => d.run_id === id)) ? true : undefined),
      90_000,
      'every run decided',
    );
    const info = await (await conn.jetstreamManager()).streams.info(stream);
    feed.stop();
    expect(received.filter((d) => ids.has(d.run_id))).toHaveLength(RUNS);
    expect(info.state.messages).toBe(RUNS);
    for (const id of runIds) expect([id, received.filter((d) => d.run_id === id).length]).toEqual([id, 1]);
    for (const d of received) expect(d.terminal_state).toMatch(/^decided/);
  }, 240_000);
});
