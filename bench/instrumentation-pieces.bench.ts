/**
 * What each piece of the instrumentation costs per call, apart from NATS and the services: the
 * request observers, the metered event-log append, and the tracing helpers a proposal's path
 * goes through, each timed in a loop against the same path without it. The end-to-end rounds of
 * `npm run bench` (bench/e2e-overhead.ts) move by tens of percent between rounds; these loops
 * tell which piece is worth cutting. Arms alternate in every repetition; the figure is the
 * median of the repetitions (CPU time of this process per call, in µs). BENCH_PIECES_N calls
 * per repetition (20,000), BENCH_PIECES_REPS repetitions (7).
 *
 *   TS_NODE_PROJECT=tsconfig.base.json node --expose-gc -r @swc-node/register -r tsconfig-paths/register bench/instrumentation-pieces.bench.ts
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import type { AppendResult, EventLog, LogEvent } from '@conclave/event-log';
import { headers } from 'nats';
import { ConclaveMetrics } from '../libs/service-kit/src/lib/metrics';
import { MeteredEventLog } from '../libs/service-kit/src/lib/metrics-event-log';
import { combineObservers, logContextObserver, metricsObserver, type RequestObserver } from '../libs/service-kit/src/lib/metrics-requests';
import {
  activeTraceId,
  contextOfEvent,
  eventTrace,
  producerSpan,
  startTracing,
  stopTracing,
  traceMetadata,
  tracingObserver,
} from '../libs/service-kit/src/lib/tracing';
import type { ServiceConfig } from '../libs/service-kit/src/lib/service-config';
import { inLogContext } from '../libs/service-kit/src/lib/logging';
import { fmt, int } from './bench-util';

const N = int('BENCH_PIECES_N', 20_000);
const REPS = int('BENCH_PIECES_REPS', 7);

Logger.overrideLogger(['error']);

const dropAll: tracing.SpanExporter = { export: (_s, done) => done({ code: 0 }), shutdown: async () => undefined };

const result: AppendResult = { duplicate: false, position: '1', version: '1' } as unknown as AppendResult;
/** An event log whose append answers at once: the cost measured is the decorator's. */
const fakeLog = {
  append: () => Promise.resolve(result),
} as unknown as EventLog<LogEvent>;

const metrics = new ConclaveMetrics('bench', { instrumentation: 'on' } as ServiceConfig);
const metered = new MeteredEventLog(fakeLog, metrics);
const events = [{ type: 'ProposalSubmitted', data: {} }] as unknown as LogEvent[];

const offObserver = logContextObserver();
const onObserver = combineObservers(metricsObserver(metrics), tracingObserver(), logContextObserver());
const sampledHeaders = headers();
sampledHeaders.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
const request = (h = sampledHeaders) => ({
  pattern: 'v1.respond',
  subject: 'bench.v1.respond',
  headers: h,
  body: { proposal_id: '01JDEXAMPLE0000000000000000', participant_id: 'a' },
});
const handled = async () => ({ ok: true });

async function observe(o: RequestObserver): Promise<void> {
  const r = request();
  const reply = await (o.around ? o.around(r, handled) : handled());
  o.replied?.(r, reply, 0.002);
}

const metadata = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };

interface Piece {
  name: string;
  /** Tracing on (a provider with a dropping batch processor) while this arm runs. */
  tracing?: boolean;
  run: () => Promise<unknown> | unknown;
}

/** Pairs: the first of each is the path without the piece. */
const pieces: Piece[][] = [
  [
    { name: 'request observers: log context only (off)', run: () => observe(offObserver) },
    { name: 'request observers: metrics + log context (metrics)', run: () => observe(onObserver) },
    { name: 'request observers: metrics + span + log context (on)', tracing: true, run: () => observe(onObserver) },
  ],
  [
    { name: 'append: plain log (off)', run: () => fakeLog.append('proposal-x', events, 'any') },
    { name: 'append: metered (metrics)', run: () => metered.append('proposal-x', events, 'any') },
    {
      name: 'append: metered, in a request span (on)',
      tracing: true,
      run: () => {
        const span = trace.getTracer('bench').startSpan('request');
        return context.with(trace.setSpan(ROOT_CONTEXT, span), () => metered.append('proposal-x', events, 'any')).finally(() => span.end());
      },
    },
  ],
  [
    { name: 'event in a reactor: log context, no tracing', run: () => inLogContext({ reactor: 'r' }, () => 1, eventTrace(metadata)) },
    {
      name: 'event in a reactor: log and event trace context (on)',
      tracing: true,
      run: () => inLogContext({ reactor: 'r' }, () => 1, eventTrace(metadata)),
    },
    {
      name: 'event in a reactor: and its trace read (on)',
      tracing: true,
      run: () => inLogContext({ reactor: 'r' }, () => activeTraceId(), eventTrace(metadata)),
    },
    { name: 'event trace: contextOfEvent only (on)', tracing: true, run: () => contextOfEvent(metadata) },
  ],
  [
    { name: 'publish: no span', run: () => Promise.resolve(1) },
    {
      name: 'publish: producer span from event metadata (on)',
      tracing: true,
      run: () => producerSpan('publish x', { 'messaging.system': 'nats' }, async () => 1, contextOfEvent(metadata)),
    },
  ],
  [
    { name: 'trace metadata: none', run: () => undefined },
    {
      name: 'trace metadata: inject in a span (on)',
      tracing: true,
      run: () => {
        const span = trace.getTracer('bench').startSpan('x');
        const m = context.with(trace.setSpan(ROOT_CONTEXT, span), traceMetadata);
        span.end();
        return m;
      },
    },
  ],
  [
    // Inside a log context and a trace context, as a request's handling is: what every promise pays.
    { name: 'async chain of 10 awaits in a log context', run: () => inLogContext({ subject: 'x' }, () => chain(10)) },
    {
      name: 'async chain of 10 awaits in a log and a trace context (on)',
      tracing: true,
      run: () => context.with(ROOT_CONTEXT, () => inLogContext({ subject: 'x' }, () => chain(10))),
    },
  ],
];

async function chain(n: number): Promise<number> {
  let x = 0;
  for (let i = 0; i < n; i++) x += await Promise.resolve(i);
  return x;
}

async function timed(p: Piece): Promise<number> {
  if (p.tracing) startTracing('bench', { spanProcessors: [new tracing.BatchSpanProcessor(dropAll)] });
  try {
    for (let i = 0; i < 1_000; i++) await p.run();
    (globalThis as { gc?: () => void }).gc?.();
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < N; i++) await p.run();
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / N;
  } finally {
    if (p.tracing) await stopTracing();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function main(): Promise<void> {
  console.log(`# instrumentation pieces: ${REPS} repetitions of ${N} calls per arm, arms alternating; CPU µs per call (median, min-max)`);
  for (const group of pieces) {
    const times = group.map(() => [] as number[]);
    for (let r = 0; r < REPS; r++)
      for (let i = 0; i < group.length; i++) {
        const k = (i + r) % group.length;
        times[k].push(await timed(group[k]));
      }
    const base = median(times[0]);
    group.forEach((p, i) => {
      const m = median(times[i]);
      const extra = i === 0 ? '' : ` (+${fmt(m - base, 2)} µs)`;
      console.log(`${p.name.padEnd(58)} ${fmt(m, 2)} µs (${fmt(Math.min(...times[i]), 2)}-${fmt(Math.max(...times[i]), 2)})${extra}`);
    });
  }
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
