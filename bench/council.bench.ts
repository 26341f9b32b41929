/**
 * Council benchmark: a 5-member, 3-round council with scripted members that answer
 * after fixed delays. Prints the wall time of each run (start request → DecisionRecord received
 * from COUNCIL_DECISIONS) against its critical path, the sum over stages of the slowest member
 * tasked in that stage; the difference is what the controller, the event log and NATS add.
 * Never fails on time. The council service runs in this process, as in the e2e tests, on streams
 * of its own that are deleted at the end.
 *
 *   npm run bench:council                       # 5 runs, member delays 40..200 ms
 *   BENCH_RUNS=10 BENCH_DELAY_MS=20 npm run bench:council
 */
import 'reflect-metadata';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { acpStreamNames } from '@conclave/messaging';
import { CouncilClient, CouncilDecisionMessage } from '@conclave/sdk';
import { ScriptedMember, relentlessBehaviour, scriptedDescriptor, scriptedGoalContract } from '@conclave/sdk/testing';
import { ConclaveHarness } from '../test/support/conclave-harness';

const RUNS = int('BENCH_RUNS', 5);
/** Member i answers every task after (i + 1) × this many ms. */
const DELAY_MS = int('BENCH_DELAY_MS', 40);
const MEMBERS = 5;
const ROUNDS = 3;

function int(name: string, fallback: number): number {
  const v = process.env[name];
  return v ? Number(v.replace(/_/g, '')) : fallback;
}
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const h = new ConclaveHarness({ LOG_LEVEL: 'error' });
  await h.start('council');
  const prefix = h.env['CONCLAVE_COUNCIL_PREFIX'];
  const ids = Array.from({ length: MEMBERS }, (_, i) => `bench-m${i + 1}`);
  const delay = new Map(ids.map((id, i) => [id, (i + 1) * DELAY_MS]));
  // A new objection every round and rising scores: the run goes the full three rounds.
  const members = ids.map((id) => new ScriptedMember(h.nc, id, relentlessBehaviour({ delayMs: delay.get(id) }), prefix).start());
  // Five members: all propose, review and revise; the fastest also chairs and draws the conflict map.
  const panel = ids.map((id, i) =>
    scriptedDescriptor(
      id,
      ['builder', 'skeptic', 'operator', 'economist', 'security'][i],
      i === 0 ? ['proposer', 'reviewer', 'reviser', 'moderator', 'chair'] : undefined,
    ),
  );
  const client = new CouncilClient(h.nc, prefix);
  const consumer = await h.nc.jetstream().consumers.get(acpStreamNames(h.run).councilDecisions);
  const messages = await consumer.consume();
  const arrived = new Map<string, { at: number; d: CouncilDecisionMessage }>();
  let waiting: { runId: string; resolve: () => void } | undefined;
  void (async () => {
    for await (const m of messages) {
      const d = m.json<CouncilDecisionMessage>();
      arrived.set(d.run_id, { at: performance.now(), d });
      if (waiting?.runId === d.run_id) waiting.resolve();
    }
  })();

  console.log(
    `council benchmark: ${MEMBERS} members, ${ROUNDS} rounds, member delays ${ids.map((id) => delay.get(id)).join('/')} ms, ${RUNS} runs`,
  );
  console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}; NATS at ${h.env['NATS_URL']}`);
  // Other work on the machine moves these figures more than anything the controller does.
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  console.log(`load average at start: ${load()}`);
  const rows: { wall: number; critical: number; tasks: number; stages: number; terminal: string }[] = [];
  for (let r = 0; r < RUNS + 1; r++) {
    const t0 = performance.now();
    const runId = await client.start({
      goal_contract: scriptedGoalContract({ budget: { max_rounds: ROUNDS, max_time: '5m' } }),
      panel,
      policy: { stage_timeout_ms: 30_000, plateau_rounds: 5 },
    });
    if (!arrived.has(runId)) await new Promise<void>((resolve) => (waiting = { runId, resolve }));
    const { at, d } = arrived.get(runId)!;
    const record = await client.get(runId);
    // Critical path: per (round, stage), the slowest member tasked in it.
    const slowest = new Map<string, number>();
    for (const t of record.tasks) {
      const key = `${t.round}:${t.stage}`;
      slowest.set(key, Math.max(slowest.get(key) ?? 0, delay.get(t.member_id) ?? 0));
    }
    const critical = [...slowest.values()].reduce((a, b) => a + b, 0);
    const row = { wall: at - t0, critical, tasks: record.tasks.length, stages: slowest.size, terminal: d.terminal_state };
    if (r === 0) {
      console.log(`warm-up: ${fmt(row.wall)} ms (not counted)`);
      continue;
    }
    rows.push(row);
    const overhead = row.wall - row.critical;
    console.log(
      `run ${r}: wall ${fmt(row.wall)} ms, critical path ${row.critical} ms (${row.stages} stages, ${row.tasks} tasks, ${record.rounds.length} rounds), ` +
        `overhead ${fmt(overhead)} ms = ${fmt((100 * overhead) / row.wall, 2)}% of the run, ${fmt(overhead / row.stages, 2)} ms per stage; ${row.terminal}`,
    );
  }
  const walls = rows.map((x) => x.wall);
  const overheads = rows.map((x) => x.wall - x.critical);
  const pcts = rows.map((x) => (100 * (x.wall - x.critical)) / x.wall);
  console.log(
    `median: wall ${fmt(median(walls))} ms, critical path ${rows[0]?.critical} ms, overhead ${fmt(median(overheads))} ms = ${fmt(median(pcts), 2)}% ` +
      `(min ${fmt(Math.min(...pcts), 2)}%, max ${fmt(Math.max(...pcts), 2)}%); goal < 1%`,
  );
  console.log(`load average at end: ${load()}`);

  await messages.close().catch(() => undefined);
  await Promise.all(members.map((m) => m.stop()));
  await h.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
