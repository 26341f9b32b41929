/**
 * Event-log benchmark: raw JetStream figures measured with the nats client, then the adapter's
 * append rate, one-aggregate load latency (warm cache, cold chain walk, cold filtered scan) with
 * BENCH_EVENTS events in the log, and subscription catch-up, each as a ratio to the raw figure.
 * Prints figures; never fails on time. Uses its own streams and deletes them at the end.
 *
 *   npm run bench:log                       # 1,000,000 events
 *   BENCH_EVENTS=100000 npm run bench:log   # quicker
 *
 * Env: NATS_URL (default 127.0.0.1:4222), BENCH_EVENTS (default 1,000,000), BENCH_RAW_EVENTS
 * (raw pipelined publish/consume sample, default min(BENCH_EVENTS, 200,000)), BENCH_WINDOW
 * (appends in flight, default 512), BENCH_SAMPLES (aggregates loaded, default 1,000).
 */
import { AggregateCache, JetStreamEventLog, type LogEvent } from '@conclave/event-log';
import { connect, consumerOpts, JSONCodec, StorageType, type NatsConnection } from 'nats';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { monotonicFactory } from 'ulid';

const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';
const EVENTS = int('BENCH_EVENTS', 1_000_000);
const RAW_EVENTS = int('BENCH_RAW_EVENTS', Math.min(EVENTS, 200_000));
const WINDOW = int('BENCH_WINDOW', 512);
const SAMPLES = int('BENCH_SAMPLES', 1_000);
const SEQUENTIAL = 2_000;
const PER_AGGREGATE = 10; // commits per aggregate: a proposal with its responses and resolution

const nextId = monotonicFactory();

interface BenchEvent extends LogEvent {
  readonly event_id: string;
  readonly type: string;
  readonly schema_version: 1;
  readonly occurred_at: string;
  readonly actor: string;
  readonly causation_id: string;
  readonly correlation_id: string;
  readonly data: { readonly n: number; readonly confidence: number; readonly note: string };
}

function event(n: number): BenchEvent {
  const id = nextId();
  return {
    event_id: id,
    type: 'ResponseRecorded',
    schema_version: 1,
    occurred_at: '2026-11-30T12:00:00.000Z',
    actor: 'agent-01J0000000000000000000000',
    causation_id: id,
    correlation_id: id,
    data: { n, confidence: 0.82, note: 'endorse: the change is covered by the migration plan' },
  };
}

function int(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v.replace(/_/g, ''));
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
  return n;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number): string => `${n.toFixed(2)} ms`;
const pct = (a: number, b: number): string => `${((100 * a) / b).toFixed(0)}% of raw`;
const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function pipelined(count: number, window: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(window, count) }, worker));
  return (performance.now() - t0) / 1000;
}

async function raw(nc: NatsConnection, tag: string): Promise<{ seq: number; pipe: number; pipeExpect: number; consume: number }> {
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const name = `BENCH_RAW_${tag}`;
  const prefix = `bench_raw_${tag.toLowerCase()}`;
  await jsm.streams.add({ name, subjects: [`${prefix}.>`], storage: StorageType.File, allow_direct: true });
  try {
    // The same bytes the adapter publishes for a one-event commit, with a Nats-Msg-Id.
    const codec = JSONCodec();
    const payload = codec.encode({ v: 1, events: [event(0)] });
    let t0 = performance.now();
    for (let i = 0; i < SEQUENTIAL; i++) await js.publish(`${prefix}.evt.proposal.s${i % 1000}`, payload, { msgID: `s${i}` });
    const seq = SEQUENTIAL / ((performance.now() - t0) / 1000);
    const secs = await pipelined(RAW_EVENTS, WINDOW, (i) =>
      js.publish(`${prefix}.evt.proposal.p${i % 100_000}`, payload, { msgID: `p${i}` }),
    );
    const pipe = RAW_EVENTS / secs;
    // The same with optimistic concurrency, in the adapter's layout (PER_AGGREGATE commits per
    // subject, each expecting the previous): the server-side cost of the check, without the adapter.
    const chains = Math.ceil(RAW_EVENTS / PER_AGGREGATE);
    let sent = 0;
    const secsExpect = await pipelined(chains, WINDOW, async (a) => {
      let last = 0;
      for (let c = 0; c < PER_AGGREGATE && sent < RAW_EVENTS; c++, sent++) {
        last = (await js.publish(`${prefix}.evt.proposal.e${a}`, payload, { msgID: `e${a}.${c}`, expect: { lastSubjectSequence: last } }))
          .seq;
      }
    });
    const pipeExpect = sent / secsExpect;
    const total = SEQUENTIAL + RAW_EVENTS + sent;
    const opts = consumerOpts();
    opts.orderedConsumer();
    opts.deliverAll();
    t0 = performance.now();
    const sub = await js.subscribe(`${prefix}.>`, opts);
    let n = 0;
    for await (const m of sub) {
      n++;
      if (m.info.pending === 0 && n >= total) break;
    }
    sub.unsubscribe();
    const consume = n / ((performance.now() - t0) / 1000);
    return { seq, pipe, pipeExpect, consume };
  } finally {
    await jsm.streams.delete(name).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const tag = nextId();
  console.log(`event-log benchmark: ${fmt(EVENTS)} events, ${cpus().length} cores, Node ${process.version}`);
  const nc = await connect({ servers: NATS_URL, name: 'log.bench' });
  console.log(`nats-server ${nc.info?.version} at ${NATS_URL}; window ${WINDOW} appends in flight\n`);

  console.log('raw JetStream (nats client, 1-event commit payload, with Nats-Msg-Id)');
  const r = await raw(nc, tag);
  console.log(`  publish sequential   ${fmt(r.seq)} msg/s`);
  console.log(`  publish pipelined    ${fmt(r.pipe)} msg/s  (${fmt(RAW_EVENTS)} messages)`);
  console.log(`  publish pipelined, expected-last-subject-seq  ${fmt(r.pipeExpect)} msg/s  (${fmt(RAW_EVENTS)} messages)`);
  console.log(`  consume (ordered)    ${fmt(r.consume)} msg/s\n`);

  const log = await JetStreamEventLog.create<BenchEvent>({
    connection: nc,
    streamName: `BENCH_${tag}_EVENTS`,
    subjectPrefix: `bench_${tag.toLowerCase()}`,
  });
  const scanLog = await JetStreamEventLog.create<BenchEvent>({
    connection: nc,
    streamName: log.streamName,
    subjectPrefix: log.subjectPrefix,
    readChainLimit: 0, // forces the filtered-scan fallback
  });
  try {
    console.log('adapter: JetStreamEventLog.append (expected version, Nats-Msg-Id, 1 event per commit)');
    let t0 = performance.now();
    let v: string = 'no_stream';
    const seqStream = `sequential-${tag}`;
    for (let i = 0; i < SEQUENTIAL; i++) v = (await log.append(seqStream, [event(i)], v)).version;
    const appendSeq = SEQUENTIAL / ((performance.now() - t0) / 1000);
    console.log(`  append sequential    ${fmt(appendSeq)} events/s  ${pct(appendSeq, r.seq)}`);

    // Each aggregate gets PER_AGGREGATE commits in order, each with the previous version;
    // WINDOW aggregates are written concurrently.
    const aggregates = Math.max(1, Math.ceil(EVENTS / PER_AGGREGATE));
    const streams = Array.from({ length: aggregates }, (_, i) => `proposal-${tag}${i.toString(36).toUpperCase()}`);
    let written = 0;
    let firstSecs = 0;
    const progressEvery = Math.max(100_000, Math.floor(EVENTS / 5));
    const tLoad = performance.now();
    const secs = await pipelined(aggregates, WINDOW, async (a) => {
      let version = 'no_stream';
      for (let c = 0; c < PER_AGGREGATE && written < EVENTS; c++) {
        version = (await log.append(streams[a], [event(c)], version)).version;
        if (++written === RAW_EVENTS) firstSecs = (performance.now() - tLoad) / 1000;
        if (written % progressEvery === 0) console.log(`    ... ${fmt(written)} appended`);
      }
    });
    // Same count as the raw runs (a stream of the same size), then the whole load.
    const appendFirst = RAW_EVENTS / (firstSecs || secs);
    const appendPipe = written / secs;
    console.log(
      `  append pipelined     ${fmt(appendFirst)} events/s  ${pct(appendFirst, r.pipe)}, ${pct(appendFirst, r.pipeExpect).replace('raw', 'raw with expected seq')}  (first ${fmt(RAW_EVENTS)})`,
    );
    console.log(`  append pipelined     ${fmt(appendPipe)} events/s  (all ${fmt(written)} events in ${secs.toFixed(1)} s)\n`);

    const total = written + SEQUENTIAL;
    console.log(`one-aggregate load (${PER_AGGREGATE} commits each), ${fmt(total)} events in the log, ${SAMPLES} random aggregates`);
    type S = { n: number };
    const cache = new AggregateCache<S, BenchEvent>(log, {
      categories: ['proposal'],
      initial: () => ({ n: 0 }),
      evolve: (s) => ({ n: s.n + 1 }),
      maxEntries: SAMPLES,
    });
    await cache.start();
    const sample = Array.from({ length: SAMPLES }, (_, i) => streams[Math.floor((i * 7919) % aggregates)]);
    const cold: number[] = [];
    for (const s of sample) {
      t0 = performance.now();
      await cache.reload(s);
      cold.push(performance.now() - t0);
    }
    const warm: number[] = [];
    for (const s of sample) {
      t0 = performance.now();
      const loaded = await cache.load(s);
      warm.push(performance.now() - t0);
      if (!loaded.cached) throw new Error(`expected a cache hit for ${s}`);
    }
    const scan: number[] = [];
    for (const s of sample.slice(0, Math.min(200, SAMPLES))) {
      t0 = performance.now();
      await scanLog.read(s);
      scan.push(performance.now() - t0);
    }
    await cache.stop();
    const raw1: number[] = [];
    const jsm = await nc.jetstreamManager();
    for (const s of sample) {
      t0 = performance.now();
      await jsm.streams.getMessage(log.streamName, { last_by_subj: log.subjectOf(s) });
      raw1.push(performance.now() - t0);
    }
    const line = (label: string, xs: number[]): void =>
      console.log(`  ${label.padEnd(34)} p50 ${ms(percentile(xs, 50))}  p99 ${ms(percentile(xs, 99))}`);
    line('raw last_by_subj get (reference)', raw1);
    line('warm: cache hit (1 version check)', warm);
    line('cold: read, commit-chain walk', cold);
    line(`cold: read, filtered scan (${scan.length})`, scan);
    console.log('');

    console.log('adapter: subscription catch-up from the start, all categories');
    let n = 0;
    t0 = performance.now();
    const sub = log.subscribe('*', 'start', () => {
      n++;
    });
    await sub.caughtUp;
    const catchUp = n / ((performance.now() - t0) / 1000);
    await sub.stop();
    console.log(`  catch-up             ${fmt(catchUp)} events/s  ${pct(catchUp, r.consume)}  (${fmt(n)} events)\n`);

    const mem = process.memoryUsage();
    console.log(`process memory: rss ${fmt(mem.rss / 2 ** 20)} MiB, heap used ${fmt(mem.heapUsed / 2 ** 20)} MiB`);
  } finally {
    await log.deleteStream().catch(() => undefined);
    await scanLog.close();
    await log.close();
    await nc.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
