/**
 * What metrics and tracing cost: intake, resolver and sweeper in the bench's process (as in the
 * in-process figures), run in alternating rounds with instrumentation on (Prometheus metrics,
 * and OpenTelemetry tracing into a batch processor whose exporter drops every span: the whole
 * cost of recording and handing spans over, without a network) and off
 * (CONCLAVE_INSTRUMENTATION=off, no tracer provider). Each round: a fresh deployment, a warm-up,
 * then BENCH_OVERHEAD_PROPOSALS proposals (submit + 3 responses + decision received) with
 * BENCH_IN_FLIGHT at a time. BENCH_OVERHEAD_ARMS (default `on,off`) may add `metrics` (metrics
 * without tracing) to tell the two costs apart. Measured per round: proposals/s, and the CPU time of this Node
 * process (services, agent and reader; not nats-server) per proposal, which the shared machine's other
 * load moves less than wall-clock throughput. The agent records no spans unless
 * BENCH_OVERHEAD_AGENT=traced (see AGENT). BENCH_OVERHEAD_MODE=concurrent runs the arms of a round
 * at the same time instead, a process each, paced (see forkedRound); `isolated` one after the
 * other, a process each. NATS_URL must be set before this module loads.
 */
import 'reflect-metadata';
import { ConclaveClient } from '@conclave/sdk';
import { NATS_CONNECTION, startTracing, stopTracing } from '@conclave/service-kit';
import { ProxyTracerProvider } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { fork, type ChildProcess } from 'node:child_process';
import type { NatsConnection } from 'nats';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { ConclaveHarness } from '../test/support/conclave-harness';
import { DecisionCollector } from '../test/support/decisions';
import { fmt, int, sleep } from './bench-util';
import { shares } from './profile-shares';

const ROUNDS = int('BENCH_OVERHEAD_ROUNDS', 4);
const IN_FLIGHT = int('BENCH_IN_FLIGHT', 64);
/**
 * `sequential` (default): the arms' rounds one after the other in this process. `concurrent`:
 * the arms of a round at the same time, each in its own process, paced (see forkedRound).
 * `isolated`: one after the other, each in a process of its own: every round starts from a fresh
 * heap with only its own arm's code compiled, as a service does, flat out unless paced.
 */
const MODE = (['concurrent', 'isolated'] as const).find((m) => m === process.env['BENCH_OVERHEAD_MODE']) ?? 'sequential';
/** Whether each arm's round runs in a process of its own (bench/e2e-overhead-arm.ts). */
const FORKED = MODE !== 'sequential';
/**
 * Proposals started per second (0: as fast as IN_FLIGHT allows). Concurrent arms are paced (100
 * unless set): run flat out, each would take what CPU the others leave.
 */
const RATE = int('BENCH_OVERHEAD_RATE', MODE === 'concurrent' ? 100 : 0);
export const PROPOSALS = int('BENCH_OVERHEAD_PROPOSALS', 1_000);
/** A forked arm's process compiles its code during its warm-up alone: a longer one. */
const WARMUP = int('BENCH_OVERHEAD_WARMUP', FORKED ? 500 : 200);
/** When set, a CPU profile of each measured round is written there (`<round>-<arm>.cpuprofile`). */
const PROFILE_DIR = process.env['BENCH_OVERHEAD_PROFILE'];
/**
 * When set, a sampling heap profile of each measured round, collected objects included, is written
 * there (`<round>-<arm>.heapprofile`, for a browser's developer tools) and its total printed per
 * proposal: what each arm allocates. Such rounds' CPU figures are mostly the profiler's. Not with
 * BENCH_OVERHEAD_PROFILE (one profiler at a time).
 */
const ALLOCATION_DIR = PROFILE_DIR ? undefined : process.env['BENCH_OVERHEAD_ALLOCATIONS'];

/**
 * `on`: metrics and tracing (every trace sampled); `sampled`: the same with
 * OTEL_TRACES_SAMPLER=parentbased_traceidratio at BENCH_OVERHEAD_SAMPLE_RATIO (default 0.1);
 * `unsampled`: the same with parentbased_always_off (no trace recorded: what propagating the trace
 * context costs by itself); `metrics`: metrics only; `off`: CONCLAVE_INSTRUMENTATION=off;
 * `burn`: `off` plus BENCH_OVERHEAD_BURN_US (100) µs of busy CPU per proposal, a known cost, to
 * see how much the A/B reports for it.
 */
type Arm = 'on' | 'sampled' | 'unsampled' | 'metrics' | 'off' | 'burn';
const ARMS = (process.env['BENCH_OVERHEAD_ARMS'] ?? 'on,off')
  .split(',')
  .filter((a): a is Arm => ['on', 'sampled', 'unsampled', 'metrics', 'off', 'burn'].includes(a));
const SAMPLE_RATIO = process.env['BENCH_OVERHEAD_SAMPLE_RATIO'] ?? '0.1';
/**
 * `plain` (default): the agents and the decision reader have no OpenTelemetry SDK, as an agent in
 * its own process without one: its requests carry no `traceparent`, intake starts each trace and
 * the services trace every proposal in full, but the agent records no span of its own; what is measured is the
 * services' cost. `traced`: they share the services' tracer provider, so their CLIENT and CONSUMER
 * spans are recorded too (and counted in this process's CPU).
 */
const AGENT = process.env['BENCH_OVERHEAD_AGENT'] === 'traced' ? 'traced' : 'plain';
/**
 * Where the `sampled` and `unsampled` arms decide: `agent` (default), in the agent's own no-op
 * provider, whose sampler and header cost the bench's process then pays too; `services`: the
 * agent sends no `traceparent` and intake's root sampler decides, so only the services' cost is
 * added.
 */
const SAMPLED_AT = process.env['BENCH_OVERHEAD_SAMPLED_AT'] === 'services' ? 'services' : 'agent';

/**
 * The bench's agent without an SDK: OpenTelemetry's no-op provider. In the `sampled` and
 * `unsampled` arms the trace is sampled (or not) where it starts, at the agent, as with an agent
 * whose SDK samples: a provider that records nothing and only decides (unless SAMPLED_AT is
 * `services`).
 */
async function agentWithoutSdk(h: ConclaveHarness, arm: Arm): Promise<ConclaveClient> {
  const sampler =
    SAMPLED_AT === 'services'
      ? undefined
      : arm === 'unsampled'
        ? new tracing.AlwaysOffSampler()
        : arm === 'sampled'
          ? new tracing.TraceIdRatioBasedSampler(Number(SAMPLE_RATIO))
          : undefined;
  const tracerProvider = sampler ? new tracing.BasicTracerProvider({ sampler }) : new ProxyTracerProvider();
  return ConclaveClient.connect({ nc: h.nc, prefix: h.prefix, streamSuffix: h.run, tracerProvider });
}

const traces = (arm: Arm) => arm === 'on' || arm === 'sampled' || arm === 'unsampled';

export interface OverheadRound {
  round: number;
  arm: Arm;
  rate: number;
  cpuUsPerProposal: number;
  /** Of which in the kernel (socket reads and writes, mostly). */
  systemUsPerProposal: number;
  /**
   * Of which on the main thread (Linux; NaN elsewhere): the rest is V8's and libuv's worker threads
   * (concurrent compilation and garbage collection), which a CPU profile does not see.
   */
  mainThreadUsPerProposal: number;
  /** Garbage-collection pauses (the main thread's wait for each collection), by kind. */
  gcPauseUsPerProposal: { minor: number; major: number };
  /**
   * Read and write system calls of this process per proposal (Linux; NaN elsewhere): nats.js
   * writes what was queued in one go, so fewer messages per write shows as more writes.
   */
  syscallsPerProposal: { reads: number; writes: number };
  /** NATS messages in and out of this process's connections per proposal (NaN where not counted). */
  natsMessagesPerProposal: number;
}

export interface OverheadFigures {
  rounds: OverheadRound[];
  arms: Arm[];
  /** Per arm: median over its rounds, and the spread (min to max). */
  rate: Partial<Record<Arm, Spread>>;
  cpu: Partial<Record<Arm, Spread>>;
  /** Per instrumented arm, against `off`: CPU per proposal added in each round (percent): median and spread. */
  cpuAddedPct: Partial<Record<Arm, Spread>>;
  /** Per instrumented arm, against `off`: throughput lost in each round (percent): median and spread. */
  rateLossPct: Partial<Record<Arm, Spread>>;
}

interface Spread {
  median: number;
  min: number;
  max: number;
}

/** An exporter that drops every span: the cost measured is recording and handing spans over. */
const dropAll: tracing.SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => undefined,
};

const now = () => new Date().toISOString();

/** Milliseconds the main thread spent in garbage-collection pauses from now to `stop()`, by kind. */
function gcPauses(): { stop(): { minor: number; major: number } } {
  const total = { minor: 0, major: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) total.minor += e.duration;
      else total.major += e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      observer.disconnect();
      return total;
    },
  };
}

/** Read and write system calls this process has made, from /proc. */
function syscalls(): { reads: number; writes: number } {
  try {
    const io = readFileSync('/proc/self/io', 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
    return { reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { reads: NaN, writes: NaN };
  }
}

/** CPU seconds of this process's main thread (its thread id is the process id), from /proc. */
function threadCpu(): { main: number } {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name.
    return { main: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
  } catch {
    return { main: NaN };
  }
}
const TICKS_PER_SECOND = 100;

const BURN_US = int('BENCH_OVERHEAD_BURN_US', 100);
let burning = false;

/** Busy CPU for `us` µs (the `burn` arm). */
function burn(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

async function oneProposal(agent: ConclaveClient, i: number): Promise<void> {
  if (burning) burn(BURN_US);
  const p = await agent.propose({ domain: 'bench.overhead', author: `author-${i}`, payload: { i }, quorum: 3, created_at: now() });
  await agent.endorse(p.proposal_id, { participant_id: 'a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
  await agent.endorse(p.proposal_id, { participant_id: 'b', domain_authority: 0.7, confidence: 0.6, trust_score: 0.8 });
  await agent.challenge(p.proposal_id, { participant_id: 'c', domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 });
}

async function drive(agent: ConclaveClient, decisions: DecisionCollector, from: number, count: number): Promise<void> {
  const before = decisions.received.length;
  if (RATE > 0) await paced(agent, from, count);
  else {
    let next = from;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < from + count) await oneProposal(agent, next++);
      }),
    );
  }
  await decisions.until(() => decisions.received.length >= before + count, 120_000, `${count} decisions`);
}

/**
 * Proposals started at RATE per second (at most IN_FLIGHT at a time): every arm then handles the
 * same load. Flat out (the default), the difference between arms is larger than at a steady rate
 * (docs/benchmarks.md, runs K to N); not because an arm batches fewer messages per system call
 * (the reads and writes per proposal are the same in both arms); what does differ flat out is the
 * garbage collector's minor pauses per proposal (run N).
 */
async function paced(agent: ConclaveClient, from: number, count: number): Promise<void> {
  const t0 = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < count; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait >= 1) await sleep(wait);
    while (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
    const p: Promise<void> = oneProposal(agent, from + i).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
}

/** One arm's deployment, warmed up: intake, resolver and sweeper, an agent and a decision reader. */
export interface ArmDeployment {
  /** Runs `proposals` proposals and measures them (a CPU profile too when BENCH_OVERHEAD_PROFILE is set). */
  measure(n: number, proposals: number): Promise<OverheadRound>;
  stop(): Promise<void>;
}

/** Starts an arm's deployment in this process (tracing, when the arm traces, for the whole process). */
export async function deploy(arm: Arm, warmup = WARMUP): Promise<ArmDeployment> {
  if (arm === 'sampled')
    Object.assign(process.env, { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: SAMPLE_RATIO });
  if (arm === 'unsampled') process.env['OTEL_TRACES_SAMPLER'] = 'parentbased_always_off';
  // The SDK reads the sampler from the environment when it starts.
  if (traces(arm)) startTracing('bench', { spanProcessors: [new tracing.BatchSpanProcessor(dropAll)] });
  delete process.env['OTEL_TRACES_SAMPLER'];
  delete process.env['OTEL_TRACES_SAMPLER_ARG'];
  const h = new ConclaveHarness({
    LOG_LEVEL: 'error',
    CONCLAVE_SWEEP_INTERVAL_MS: '600000',
    CONCLAVE_INSTRUMENTATION: arm === 'off' || arm === 'burn' ? 'off' : 'on',
  });
  const stop = async (): Promise<void> => {
    burning = false;
    await h.stop();
    if (traces(arm)) await stopTracing();
  };
  burning = arm === 'burn';
  try {
    await h.start('intake', 'resolver', 'sweeper');
    const agent = AGENT === 'traced' ? h.client : await agentWithoutSdk(h, arm);
    const decisions = new DecisionCollector(agent);
    await drive(agent, decisions, 0, warmup);
    return { measure: (n, proposals) => measure(arm, n, agent, decisions, warmup, proposals, () => natsMessages(h)), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * NATS messages sent and received by every connection of this process (the services', the
 * agent's): more per proposal in one arm means more requests (retried appends after a conflict,
 * say), not just more work per message.
 */
function natsMessages(h: ConclaveHarness): number {
  const connections = [h.nc, ...h.instances.map((i) => i.app.get<NatsConnection>(NATS_CONNECTION))];
  return [...new Set(connections)].reduce((sum, nc) => {
    const s = nc.stats();
    return sum + s.inMsgs + s.outMsgs;
  }, 0);
}

async function measure(
  arm: Arm,
  n: number,
  agent: ConclaveClient,
  decisions: DecisionCollector,
  from: number,
  proposals: number,
  messages: () => number = () => NaN,
): Promise<OverheadRound> {
  // The previous rounds' garbage is not this round's to collect.
  (globalThis as { gc?: () => void }).gc?.();
  const profiler = PROFILE_DIR && n > 0 ? new Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const allocations = ALLOCATION_DIR && n > 0 ? new Session() : undefined;
  if (allocations) {
    allocations.connect();
    await allocations.post('HeapProfiler.enable');
    // Collected objects too: the garbage a proposal makes is what the collector's share pays for.
    // (V8 takes the two flags; Node's types for the method list only the interval.)
    const sampling = { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
    await allocations.post('HeapProfiler.startSampling', sampling);
  }
  const pauses = gcPauses();
  const threads0 = threadCpu();
  const io0 = syscalls();
  const messages0 = messages();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await drive(agent, decisions, from, proposals);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const io = syscalls();
  const threads = threadCpu();
  const paused = pauses.stop();
  if (profiler && PROFILE_DIR) {
    const { profile } = await profiler.post('Profiler.stop');
    mkdirSync(PROFILE_DIR, { recursive: true });
    writeFileSync(join(PROFILE_DIR, `${n}-${arm}.cpuprofile`), JSON.stringify(profile));
    const s = shares(profile as Parameters<typeof shares>[0]);
    console.log(`round ${n} ${arm} profile: tracing ${fmt(s.tracing)}%, metrics ${fmt(s.metrics)}%, GC ${fmt(s.gc)}% of busy CPU`);
    profiler.disconnect();
  }
  if (allocations && ALLOCATION_DIR) {
    const { profile } = await allocations.post('HeapProfiler.stopSampling');
    mkdirSync(ALLOCATION_DIR, { recursive: true });
    writeFileSync(join(ALLOCATION_DIR, `${n}-${arm}.heapprofile`), JSON.stringify(profile));
    console.log(`round ${n} ${arm} allocations: ${fmt(allocatedBytes(profile.head) / 1024 / proposals)} KB per proposal`);
    allocations.disconnect();
  }
  return {
    round: n,
    arm,
    rate: proposals / seconds,
    cpuUsPerProposal: (cpu.user + cpu.system) / proposals,
    systemUsPerProposal: cpu.system / proposals,
    mainThreadUsPerProposal: ((threads.main - threads0.main) * 1e6) / proposals,
    gcPauseUsPerProposal: { minor: (paused.minor * 1000) / proposals, major: (paused.major * 1000) / proposals },
    syscallsPerProposal: { reads: (io.reads - io0.reads) / proposals, writes: (io.writes - io0.writes) / proposals },
    natsMessagesPerProposal: (messages() - messages0) / proposals,
  };
}

async function round(arm: Arm, n: number, proposals = PROPOSALS): Promise<OverheadRound> {
  const d = await deploy(arm);
  try {
    return await d.measure(n, proposals);
  } finally {
    await d.stop();
  }
}

/**
 * The arms of one round at the same time, each in a process of its own (bench/e2e-overhead-arm.ts)
 * at the same pace: what the shared machine does to one in those seconds, it does to the others,
 * and each process starts with a fresh heap and compiled code of its own arm only. Each warms up,
 * then all start measuring together. Given one arm (`isolated`), just that arm in its process.
 */
async function forkedRound(n: number, arms: readonly Arm[] = ARMS): Promise<OverheadRound[]> {
  const children = arms.map((arm) =>
    fork(join(__dirname, 'e2e-overhead-arm.ts'), [], {
      execArgv: process.execArgv,
      env: { ...process.env, BENCH_OVERHEAD_ARM: arm, BENCH_OVERHEAD_ROUND: String(n) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const message = (c: ChildProcess, type: string) =>
    new Promise<ArmMessage>((resolve, reject) => {
      const onMessage = (m: ArmMessage) => {
        if (m.type === 'failed') reject(new Error(`arm ${m.arm}: ${m.error}`));
        else if (m.type === type) resolve(m);
        else return;
        c.off('message', onMessage);
        c.off('exit', onExit);
      };
      const onExit = (code: number | null) => reject(new Error(`an arm's process exited (${code}) before it said ${type}`));
      c.on('message', onMessage);
      c.once('exit', onExit);
    });
  try {
    await Promise.all(children.map((c) => message(c, 'ready')));
    const results = children.map((c) => message(c, 'measured'));
    for (const c of children) c.send({ type: 'go' });
    return (await Promise.all(results)).map((m) => m.round as OverheadRound);
  } finally {
    // Each stops its deployment (deleting its streams) and exits; one that hangs is killed.
    await Promise.all(children.map((c) => exited(c, 60_000)));
  }
}

function exited(c: ChildProcess, ms: number): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => c.kill('SIGKILL'), ms);
    c.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** What an arm's process and the bench say to each other (bench/e2e-overhead-arm.ts). */
export interface ArmMessage {
  type: 'ready' | 'go' | 'measured' | 'failed';
  arm?: Arm;
  round?: OverheadRound;
  error?: string;
}

/** A percentage with its sign: +6.5, -3.1. */
export const signed = (n: number): string => `${n > 0 ? '+' : ''}${fmt(n, 1)}`;

const spread = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

/** Median of an even count: the mean of the two middle values. */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export async function runOverhead(): Promise<OverheadFigures> {
  const together = MODE === 'concurrent';
  console.log(
    `\n## instrumentation overhead (agents ${AGENT === 'plain' ? 'without an OpenTelemetry SDK' : 'traced too'}): ${ROUNDS} rounds of ${ARMS.join(', ')} ${together ? 'at the same time, a process each' : MODE === 'isolated' ? 'in rotating order, a process each' : 'in rotating order'}; ${PROPOSALS} proposals per round after ${WARMUP} of warm-up, ${RATE > 0 ? `${RATE} started per second${together ? ' in each' : ''}` : 'as fast as they go'}`,
  );
  // One unmeasured round of each arm first: the code of every path compiled before any is timed
  // (a forked arm's process warms up its own).
  if (!FORKED) for (const arm of ARMS) await round(arm, 0, WARMUP);
  const rounds: OverheadRound[] = [];
  const show = (f: OverheadRound) =>
    console.log(
      `round ${f.round} ${f.arm.padEnd(7)}: ${fmt(f.rate, 0)} proposals/s, ${fmt(f.cpuUsPerProposal, 0)} µs CPU per proposal (${fmt(f.systemUsPerProposal, 0)} in the kernel, ${fmt(f.mainThreadUsPerProposal, 0)} on the main thread; GC pauses ${fmt(f.gcPauseUsPerProposal.minor, 0)} minor, ${fmt(f.gcPauseUsPerProposal.major, 0)} major; ${fmt(f.syscallsPerProposal.reads, 1)} reads and ${fmt(f.syscallsPerProposal.writes, 1)} writes; ${fmt(f.natsMessagesPerProposal, 1)} NATS messages)`,
    );
  for (let r = 1; r <= ROUNDS; r++) {
    if (together) {
      for (const f of await forkedRound(r)) {
        rounds.push(f);
        show(f);
      }
      continue;
    }
    // Rotate which arm goes first, so a drift of the machine's load favours none.
    const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length]);
    for (const arm of order) {
      const f = MODE === 'isolated' ? (await forkedRound(r, [arm]))[0] : await round(arm, r);
      rounds.push(f);
      show(f);
    }
  }
  const figures: OverheadFigures = { rounds, arms: ARMS, rate: {}, cpu: {}, cpuAddedPct: {}, rateLossPct: {} };
  for (const arm of ARMS) {
    const mine = rounds.filter((x) => x.arm === arm);
    figures.rate[arm] = spread(mine.map((x) => x.rate));
    figures.cpu[arm] = spread(mine.map((x) => x.cpuUsPerProposal));
    console.log(
      `${arm}: ${fmt(figures.rate[arm].median, 0)} proposals/s (${fmt(figures.rate[arm].min, 0)}-${fmt(figures.rate[arm].max, 0)}), ${fmt(figures.cpu[arm].median, 0)} µs CPU per proposal (${fmt(figures.cpu[arm].min, 0)}-${fmt(figures.cpu[arm].max, 0)})`,
    );
    if (arm === 'off' || !ARMS.includes('off')) continue;
    // Each round against the `off` run of the same round: the load they shared cancels best.
    const offOf = (r: number) => rounds.find((x) => x.round === r && x.arm === 'off');
    const cpuAdded = mine.map(
      (x) => (100 * (x.cpuUsPerProposal - (offOf(x.round)?.cpuUsPerProposal ?? NaN))) / (offOf(x.round)?.cpuUsPerProposal ?? NaN),
    );
    const rateLoss = mine.map((x) => (100 * ((offOf(x.round)?.rate ?? NaN) - x.rate)) / (offOf(x.round)?.rate ?? NaN));
    figures.cpuAddedPct[arm] = spread(cpuAdded);
    figures.rateLossPct[arm] = spread(rateLoss);
    const c = figures.cpuAddedPct[arm];
    const t = figures.rateLossPct[arm];
    console.log(
      `${arm} vs off, per round: CPU per proposal ${signed(c.median)}% (${signed(c.min)} to ${signed(c.max)}), throughput ${signed(-t.median)}% (${signed(-t.max)} to ${signed(-t.min)})`,
    );
  }
  return figures;
}

/** Bytes a sampling heap profile counts under `node`. */
function allocatedBytes(node: { selfSize: number; children: (typeof node)[] }): number {
  let total = node.selfSize;
  for (const child of node.children) total += allocatedBytes(child);
  return total;
}
