/**
 * End-to-end benchmark of the ACP services (issue 4). Prints, in one run:
 *   1. raw JetStream: acknowledged publish rate (pipelined), measured with the nats client;
 *      the raw bound = that rate / the JetStream messages one proposal needs;
 *   2. resolved proposals per second end to end: submit + 3 responses + the decision received
 *      by a downstream consumer of ACP_DECISIONS, many proposals in flight;
 *   3. quorum-to-decision latency p50/p99 at half that rate;
 *   4. timeout decisions' lateness after expires_at p50/p99, with BENCH_PENDING proposals pending;
 *   5. the sweeper's memory per pending proposal.
 * Never fails on time. Services run in this process (intake, resolver, sweeper), as in the e2e
 * tests, on streams of their own that are deleted at the end.
 *
 *   npm run bench                          # BENCH_PENDING=1,000,000
 *   BENCH_PENDING=100000 npm run bench     # quicker
 */
import 'reflect-metadata';
import {
  DEFAULT_DECIDER_CONFIG,
  handleProposalCommand,
  initialProposalState,
  proposalStream,
  PROPOSAL_COMMAND_TYPES,
} from '@conclave/acp-protocol';
import { JetStreamEventLog, LogEvent } from '@conclave/event-log';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ulid } from 'ulid';
import { ConclaveHarness } from '../test/support/conclave-harness';
import { DecisionCollector } from '../test/support/decisions';
import { ExpirySweeper } from '../apps/sweeper/src/app/expiry-sweeper';

const PENDING = int('BENCH_PENDING', 1_000_000);
const PROPOSALS = int('BENCH_PROPOSALS', 2_000);
const IN_FLIGHT = int('BENCH_IN_FLIGHT', 64);
const TIMEOUT_SAMPLES = int('BENCH_TIMEOUT_SAMPLES', 200);
/** Per proposal: submission, 3 responses, resolution (event log), decision + proposal notice (consumer streams). */
const MESSAGES_PER_PROPOSAL = 7;

function int(name: string, fallback: number): number {
  const v = process.env[name];
  return v ? Number(v.replace(/_/g, '')) : fallback;
}
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d });
const heapMiB = () => process.memoryUsage().heapUsed / 2 ** 20;
const gc = () => (global as { gc?: () => void }).gc?.();
const now = () => new Date().toISOString();

async function rawPublishRate(h: ConclaveHarness): Promise<number> {
  const jsm = await h.nc.jetstreamManager();
  const name = `RAW_${h.run}`;
  await jsm.streams.add({ name, subjects: [`raw.${h.run}.>`] });
  const js = h.nc.jetstream();
  const body = new TextEncoder().encode(JSON.stringify({ event_id: ulid(), type: 'ResponseRecorded', data: { confidence: 0.8, reason: 'x'.repeat(120) } }));
  const n = 50_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, k) => js.publish(`raw.${h.run}.${(i + k) % 1000}`, body)));
  }
  const rate = n / ((performance.now() - t0) / 1000);
  await jsm.streams.delete(name);
  return rate;
}

async function oneProposal(h: ConclaveHarness, i: number): Promise<{ id: string; quorumAt: number }> {
  const p = await h.client.propose({ domain: 'bench.e2e', author: `author-${i}`, payload: { i }, quorum: 3, created_at: now() });
  await h.client.endorse(p.proposal_id, { participant_id: 'a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
  await h.client.endorse(p.proposal_id, { participant_id: 'b', domain_authority: 0.7, confidence: 0.6, trust_score: 0.8 });
  await h.client.challenge(p.proposal_id, { participant_id: 'c', domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 });
  return { id: p.proposal_id, quorumAt: performance.now() };
}

async function main(): Promise<void> {
  console.log(`# Conclave end-to-end benchmark (${cpus().length} cores, Node ${process.version}, NATS ${process.env['NATS_URL'] ?? '127.0.0.1:4222'})`);
  const h = new ConclaveHarness({ LOG_LEVEL: 'error', CONCLAVE_SWEEP_INTERVAL_MS: '600000' });
  await h.start('intake', 'resolver', 'sweeper');
  const arrivals = new Map<string, number>();
  const decisions = new DecisionCollector(h.client);
  const seen = () => decisions.received.length;
  const watch = setInterval(() => {
    for (const d of decisions.received.slice(arrivals.size)) arrivals.set(d.proposal_id, performance.now());
  }, 1);
  try {
    const raw = await rawPublishRate(h);
    const bound = raw / MESSAGES_PER_PROPOSAL;
    console.log(`raw JetStream acknowledged publish (pipelined): ${fmt(raw, 0)} msg/s -> raw bound ${fmt(bound, 0)} proposals/s (${MESSAGES_PER_PROPOSAL} messages each)`);

    // 2. Throughput: IN_FLIGHT proposals at a time, until PROPOSALS are decided downstream.
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PROPOSALS) await oneProposal(h, next++);
    }));
    await decisions.until(() => seen() >= PROPOSALS, 120_000, 'all decisions');
    const rate = PROPOSALS / ((performance.now() - t0) / 1000);
    console.log(`end to end (submit + 3 responses + decision received): ${fmt(rate, 0)} proposals/s = ${fmt((100 * rate) / bound, 0)}% of the raw bound`);

    // 3. Latency at half that rate: one proposal every 1/(rate/2) s.
    const target = rate / 2;
    const n = Math.min(1000, Math.max(100, Math.round(target * 10)));
    const latencies: number[] = [];
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const due = started + (i * 1000) / target;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(oneProposal(h, PROPOSALS + i).then(async ({ id, quorumAt }) => {
        await decisions.waitFor(id, 1, 60_000);
        const at = arrivals.get(id) ?? performance.now();
        latencies.push(at - quorumAt);
      }));
    }
    await Promise.all(pending);
    console.log(`quorum-to-decision latency at ${fmt(target, 0)} proposals/s (half load), ${n} proposals: p50 ${fmt(pct(latencies, 50), 2)} ms, p99 ${fmt(pct(latencies, 99), 2)} ms`);

    // 4 + 5. BENCH_PENDING pending proposals, written to the log directly (pipelined), with only
    // the sweeper running (intake, resolver and their outboxes would otherwise replay them all);
    // then a fresh sweeper builds its deadline queue from the log, and sample proposals expire.
    for (const i of [...h.instances]) await h.kill(i);
    const log = await JetStreamEventLog.create<LogEvent>({
      connection: h.nc, streamName: h.env['CONCLAVE_EVENT_STREAM'], subjectPrefix: h.env['CONCLAVE_EVENT_SUBJECT_PREFIX'], createStream: false,
    });
    const submit = (expiresAt: string) => {
      const id = ulid();
      const { events } = handleProposalCommand(initialProposalState, {
        type: PROPOSAL_COMMAND_TYPES.SubmitProposal, command_id: ulid(), now: now(), actor: 'bench',
        data: { proposal_id: id, type: 'proposal', domain: 'bench.pending', author: 'bench', payload: { k: 1 }, quorum: 3, created_at: now(), expires_at: expiresAt },
      }, DEFAULT_DECIDER_CONFIG);
      return log.append(proposalStream(id), events, 'no_stream').then(() => id);
    };
    const far = new Date(Date.now() + 24 * 3600_000).toISOString();
    const t1 = performance.now();
    for (let i = 0; i < PENDING; i += 512) await Promise.all(Array.from({ length: Math.min(512, PENDING - i) }, () => submit(far)));
    console.log(`seeded ${fmt(PENDING, 0)} pending proposals into the log in ${fmt((performance.now() - t1) / 1000)} s`);
    gc();
    const before = heapMiB();
    const t2 = performance.now();
    const sweeper = await h.add('sweeper');
    const built = (performance.now() - t2) / 1000;
    gc();
    const after = heapMiB();
    const queued = sweeper.app.get(ExpirySweeper).pending;
    console.log(`sweeper rebuilt its deadline queue of ${fmt(queued, 0)} pending proposals in ${fmt(built)} s; heap +${fmt(after - before)} MiB = ${fmt(((after - before) * 2 ** 20) / Math.max(1, queued), 0)} bytes per pending proposal${(global as { gc?: unknown }).gc ? '' : ' (run with --expose-gc for a cleaner figure)'}`);

    // Lateness: when ProposalExpired reaches a reader of the log, minus expires_at (grace 0).
    const expiresAt = new Map<string, number>();
    const lateness: number[] = [];
    let done!: () => void;
    const allExpired = new Promise<void>((r) => (done = r));
    const follower = log.subscribe(['proposal'], await log.head(), ({ event }) => {
      const due = expiresAt.get((event as unknown as { data: { proposal_id: string } }).data.proposal_id);
      if (event.type === 'ProposalExpired' && due !== undefined) {
        lateness.push(Date.now() - due);
        if (lateness.length === TIMEOUT_SAMPLES) done();
      }
    });
    await follower.caughtUp;
    const base = Date.now() + 2_000;
    await Promise.all(Array.from({ length: TIMEOUT_SAMPLES }, async (_, i) => {
      const at = base + i * 5;
      expiresAt.set(await submit(new Date(at).toISOString()), at);
    }));
    await Promise.race([allExpired, new Promise((r) => setTimeout(r, 60_000))]);
    await follower.stop();
    console.log(`timeout decisions with ${fmt(queued, 0)} pending: ProposalExpired ${fmt(lateness.length, 0)}/${TIMEOUT_SAMPLES} after expires_at p50 ${fmt(pct(lateness, 50), 2)} ms, p99 ${fmt(pct(lateness, 99), 2)} ms (to a reader of the log; the outbox adds its publish)`);
    console.log(`process: rss ${fmt(process.memoryUsage().rss / 2 ** 20)} MiB, heap ${fmt(heapMiB())} MiB`);
  } finally {
    clearInterval(watch);
    await h.stop();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
