/**
 * The in-process figures (the first end-to-end benchmark, kept for comparison): intake, resolver and sweeper
 * in the bench's process (as in the e2e tests), on the NATS server at NATS_URL:
 *   1. raw JetStream acknowledged publish rate; raw bound = that rate / 7 messages per proposal;
 *   2. resolved proposals per second end to end, many in flight;
 *   3. quorum-to-decision latency at half that rate;
 *   4. with BENCH_PENDING proposals pending: the sweeper's rebuild time and memory per pending
 *      proposal, and timeout decisions' lateness after expires_at.
 * NATS_URL must be set before this module loads (the harness reads it once).
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
import { performance } from 'node:perf_hooks';
import { ulid } from 'ulid';
import { ConclaveHarness } from '../test/support/conclave-harness';
import { DecisionCollector } from '../test/support/decisions';
import { ExpirySweeper } from '../apps/sweeper/src/app/expiry-sweeper';
import { fmt, int, pct } from './bench-util';

export const PENDING = int('BENCH_PENDING', 300_000);
const PROPOSALS = int('BENCH_PROPOSALS', 2_000);
const IN_FLIGHT = int('BENCH_IN_FLIGHT', 64);
const TIMEOUT_SAMPLES = int('BENCH_TIMEOUT_SAMPLES', 200);
/** Per proposal: submission, 3 responses, resolution (event log), decision + proposal notice (consumer streams). */
const MESSAGES_PER_PROPOSAL = 7;

const heapMiB = () => process.memoryUsage().heapUsed / 2 ** 20;
const gc = () => (global as { gc?: () => void }).gc?.();
const now = () => new Date().toISOString();

async function rawPublishRate(h: ConclaveHarness): Promise<number> {
  const jsm = await h.nc.jetstreamManager();
  const name = `RAW_${h.run}`;
  await jsm.streams.add({ name, subjects: [`raw.${h.run}.>`] });
  const js = h.nc.jetstream();
  const body = new TextEncoder().encode(
    JSON.stringify({ event_id: ulid(), type: 'ResponseRecorded', data: { confidence: 0.8, reason: 'x'.repeat(120) } }),
  );
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

export interface InProcessFigures {
  raw: number;
  rate: number;
  bound: number;
  p50: number;
  p99: number;
  rebuildSeconds: number;
  queued: number;
  bytesPerPending: number;
  lateP50: number;
  lateP99: number;
  lateSeen: number;
}

export async function runInProcess(): Promise<InProcessFigures> {
  console.log(`\n## in process: intake, resolver, sweeper in the bench's process`);
  const f = {} as InProcessFigures;
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
    Object.assign(f, { raw, bound });
    console.log(
      `raw JetStream acknowledged publish (pipelined): ${fmt(raw, 0)} msg/s -> raw bound ${fmt(bound, 0)} proposals/s (${MESSAGES_PER_PROPOSAL} messages each)`,
    );

    // 2. Throughput: IN_FLIGHT proposals at a time, until PROPOSALS are decided downstream.
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < PROPOSALS) await oneProposal(h, next++);
      }),
    );
    await decisions.until(() => seen() >= PROPOSALS, 120_000, 'all decisions');
    const rate = PROPOSALS / ((performance.now() - t0) / 1000);
    f.rate = rate;
    console.log(
      `end to end (submit + 3 responses + decision received): ${fmt(rate, 0)} proposals/s = ${fmt((100 * rate) / bound, 0)}% of the raw bound`,
    );

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
      pending.push(
        oneProposal(h, PROPOSALS + i).then(async ({ id, quorumAt }) => {
          await decisions.waitFor(id, 1, 60_000);
          const at = arrivals.get(id) ?? performance.now();
          latencies.push(at - quorumAt);
        }),
      );
    }
    await Promise.all(pending);
    Object.assign(f, { p50: pct(latencies, 50), p99: pct(latencies, 99) });
    console.log(
      `quorum-to-decision latency at ${fmt(target, 0)} proposals/s (half load), ${n} proposals: p50 ${fmt(pct(latencies, 50), 2)} ms, p99 ${fmt(pct(latencies, 99), 2)} ms`,
    );

    // 4 + 5. BENCH_PENDING pending proposals, written to the log directly (pipelined), with only
    // the sweeper running (intake, resolver and their outboxes would otherwise replay them all);
    // then a fresh sweeper builds its deadline queue from the log, and sample proposals expire.
    for (const i of [...h.instances]) await h.kill(i);
    const log = await JetStreamEventLog.create<LogEvent>({
      connection: h.nc,
      streamName: h.env['CONCLAVE_EVENT_STREAM'],
      subjectPrefix: h.env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
      createStream: false,
    });
    const submit = (expiresAt: string) => {
      const id = ulid();
      const { events } = handleProposalCommand(
        initialProposalState,
        {
          type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
          command_id: ulid(),
          now: now(),
          actor: 'bench',
          data: {
            proposal_id: id,
            type: 'proposal',
            domain: 'bench.pending',
            author: 'bench',
            payload: { k: 1 },
            quorum: 3,
            created_at: now(),
            expires_at: expiresAt,
          },
        },
        DEFAULT_DECIDER_CONFIG,
      );
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
    Object.assign(f, { rebuildSeconds: built, queued, bytesPerPending: ((after - before) * 2 ** 20) / Math.max(1, queued) });
    console.log(
      `sweeper rebuilt its deadline queue of ${fmt(queued, 0)} pending proposals in ${fmt(built)} s; heap +${fmt(after - before)} MiB = ${fmt(((after - before) * 2 ** 20) / Math.max(1, queued), 0)} bytes per pending proposal${(global as { gc?: unknown }).gc ? '' : ' (run with --expose-gc for a cleaner figure)'}`,
    );

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
    await Promise.all(
      Array.from({ length: TIMEOUT_SAMPLES }, async (_, i) => {
        const at = base + i * 5;
        expiresAt.set(await submit(new Date(at).toISOString()), at);
      }),
    );
    await Promise.race([allExpired, new Promise((r) => setTimeout(r, 60_000))]);
    await follower.stop();
    Object.assign(f, { lateP50: pct(lateness, 50), lateP99: pct(lateness, 99), lateSeen: lateness.length });
    console.log(
      `timeout decisions with ${fmt(queued, 0)} pending: ProposalExpired ${fmt(lateness.length, 0)}/${TIMEOUT_SAMPLES} after expires_at p50 ${fmt(pct(lateness, 50), 2)} ms, p99 ${fmt(pct(lateness, 99), 2)} ms (to a reader of the log; the outbox adds its publish)`,
    );
    console.log(`process: rss ${fmt(process.memoryUsage().rss / 2 ** 20)} MiB, heap ${fmt(heapMiB())} MiB`);
    return f;
  } finally {
    clearInterval(watch);
    await h.stop();
  }
}
