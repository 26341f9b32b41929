import { context, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { InMemoryEventLog, type LogEvent } from '@conclave/event-log';
import { headers } from 'nats';
import { ConclaveMetrics } from './metrics';
import { MeteredEventLog } from './metrics-event-log';
import type { ServiceConfig } from './service-config';
import { inLogContext, logFields, withLogFields } from './logging';
import {
  activeTraceId,
  continueTrace,
  contextOfEvent,
  eventTrace,
  producerSpan,
  startTracing,
  stopTracing,
  traceMetadata,
  tracingObserver,
} from './tracing';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const ev = (id: string): LogEvent => ({ event_id: id, type: 'Happened' });
/** The context of a caller's span, as a `traceparent` header brings it. */
const remote = (flags: number): Context =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: PARENT, traceFlags: flags, isRemote: true });
const request = (flags: string) => {
  const h = headers();
  h.set('traceparent', `00-${TRACE}-${PARENT}-${flags}`);
  return { pattern: 'v1.get', subject: 'x.v1.get', headers: h, body: { proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' } };
};

/** A request through the tracing observer. */
function observe<T>(req: ReturnType<typeof request>, handle: () => Promise<T>): Promise<T> {
  const { around } = tracingObserver();
  if (!around) throw new Error('the tracing observer wraps requests');
  return around(req, handle);
}

/** The context a trace context's metadata gives (it must give one). */
function eventContext(metadata: Record<string, string>): Context {
  const ctx = contextOfEvent(metadata);
  if (!ctx) throw new Error(`no context in ${JSON.stringify(metadata)}`);
  return ctx;
}

/** The finished spans once `n` have been exported (the processor exports asynchronously). */
async function finished(exporter: tracing.InMemorySpanExporter, n: number) {
  for (let i = 0; i < 200 && exporter.getFinishedSpans().length < n; i++) await new Promise((r) => setTimeout(r, 5));
  return exporter.getFinishedSpans();
}

/** The spans exported before a marker span made after them: none may still be on the way. */
async function spansBeforeMarker(exporter: tracing.InMemorySpanExporter) {
  trace.getTracer('test').startSpan('marker', {}, ROOT_CONTEXT).end();
  for (let i = 0; i < 200 && !exporter.getFinishedSpans().some((s) => s.name === 'marker'); i++) await new Promise((r) => setTimeout(r, 5));
  return exporter.getFinishedSpans().filter((s) => s.name !== 'marker');
}

describe('tracing with the default (parent-based) sampler', () => {
  const exporter = new tracing.InMemorySpanExporter();
  const metrics = new ConclaveMetrics('test', { instrumentation: 'on' } as ServiceConfig);
  let log: MeteredEventLog;

  beforeAll(() => startTracing('test', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] }));
  afterAll(() => stopTracing());
  beforeEach(() => {
    exporter.reset();
    log = new MeteredEventLog(new InMemoryEventLog(), metrics);
  });

  it('given a sampled caller, when a request appends, then its SERVER span is the caller span child, records the append as an event, and the events carry it', async () => {
    const reply = await observe(request('01'), () => log.append('thing-1', [ev('e1')], 'no_stream').then(() => ({ ok: true })));

    expect(reply).toEqual({ ok: true });
    const [server] = await finished(exporter, 1);
    expect(await spansBeforeMarker(exporter)).toHaveLength(1);
    expect(server).toMatchObject({ name: 'v1.get', kind: SpanKind.SERVER, parentSpanContext: { spanId: PARENT } });
    expect(server.attributes).toMatchObject({
      'messaging.destination.name': 'x.v1.get',
      'conclave.proposal_id': '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    });
    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([
      ['eventlog.append', { 'conclave.category': 'thing', 'conclave.append.outcome': 'ok' }],
    ]);
    const [stored] = (await log.read('thing-1')).events;
    expect(stored.metadata).toEqual({ traceparent: `00-${TRACE}-${server.spanContext().spanId}-01` });
  });

  it('given a sampled caller, when its appends conflict, repeat and succeed, then each outcome is an event on its span', async () => {
    await log.append('thing-3', [ev('e0')], 'no_stream');
    await observe(request('01'), async () => {
      await log.append('thing-3', [ev('e1')], 'no_stream').catch(() => undefined);
      await log.append('thing-3', [ev('e1')], '0');
      await log.append('thing-3', [ev('e1')], '0');
    });

    const [server] = await finished(exporter, 1);
    expect(server.events.map((e) => e.attributes?.['conclave.append.outcome'])).toEqual(['conflict', 'ok', 'duplicate']);
  });

  it('given a caller without a trace (no traceparent, as the SDK sends without an OpenTelemetry SDK), when a request appends, then its SERVER span starts one and the events carry it', async () => {
    const req = { ...request('01'), headers: headers() };
    await observe(req, () => log.append('thing-4', [ev('e4')], 'no_stream'));

    const [server] = await finished(exporter, 1);
    expect(server).toMatchObject({ name: 'v1.get', kind: SpanKind.SERVER });
    expect(server.parentSpanContext).toBeUndefined();
    const [stored] = (await log.read('thing-4')).events;
    expect(stored.metadata).toEqual({ traceparent: `00-${server.spanContext().traceId}-${server.spanContext().spanId}-01` });
  });

  it('given an unsampled caller, when a request appends, then no span is made and the events still carry the trace, unsampled', async () => {
    let traceId: string | undefined;
    await observe(request('00'), async () => {
      traceId = activeTraceId();
      await log.append('thing-2', [ev('e2')], 'no_stream');
    });

    expect(await spansBeforeMarker(exporter)).toEqual([]);
    expect(traceId).toBe(TRACE);
    const [stored] = (await log.read('thing-2')).events;
    expect(stored.metadata).toEqual({ traceparent: `00-${TRACE}-${PARENT}-00` });
  });

  it('given an unsampled event, when its timer and publish run, then neither makes a span and the message carries the unsampled trace', async () => {
    const parent = contextOfEvent({ traceparent: `00-${TRACE}-${PARENT}-00` });
    let carried: Record<string, string> = {};
    await continueTrace(parent, 'timer t', SpanKind.INTERNAL, {}, () =>
      producerSpan('publish o', {}, async (carrier) => {
        carried = carrier;
      }),
    );

    expect(await spansBeforeMarker(exporter)).toEqual([]);
    expect(carried['traceparent']).toBe(`00-${TRACE}-${PARENT}-00`);
  });

  it('given a sampled event, when its timer publishes, then the PRODUCER span is the timer span child and the message carries it', async () => {
    const parent = contextOfEvent({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'vendor=a' });
    let carried: Record<string, string> = {};
    await continueTrace(parent, 'timer t', SpanKind.INTERNAL, { 'conclave.timer_key': 'k' }, () =>
      producerSpan('publish o', { 'messaging.destination.name': 'd' }, async (carrier) => {
        carried = carrier;
      }),
    );

    const [publish, timer] = await finished(exporter, 2);
    expect(timer).toMatchObject({ name: 'timer t', parentSpanContext: { traceId: TRACE, spanId: PARENT } });
    expect(timer.attributes).toEqual({ 'conclave.timer_key': 'k' });
    expect(publish).toMatchObject({
      name: 'publish o',
      kind: SpanKind.PRODUCER,
      parentSpanContext: { spanId: timer.spanContext().spanId },
    });
    expect(carried).toEqual({ traceparent: `00-${TRACE}-${publish.spanContext().spanId}-01`, tracestate: 'vendor=a' });
  });

  it('given a failing append inside a sampled span, then the error passes through and the span records it as an event', async () => {
    const failing = new MeteredEventLog(
      {
        ...new InMemoryEventLog(),
        append: () => Promise.reject(Object.assign(new Error('down'), { code: 'UNAVAILABLE' })),
      } as unknown as InMemoryEventLog,
      metrics,
    );
    const span = trace.getTracer('test').startSpan('request', {}, remote(TraceFlags.SAMPLED));
    await expect(context.with(trace.setSpan(ROOT_CONTEXT, span), () => failing.append('thing-4', [ev('e4')], 'no_stream'))).rejects.toThrow(
      'down',
    );
    span.end();

    const [ended] = await finished(exporter, 1);
    expect(ended.events.map((e) => e.attributes)).toEqual([{ 'conclave.category': 'thing', 'conclave.append.outcome': 'error' }]);
  });

  it('given one async context for both, then a log context keeps the trace context and a trace context keeps the log fields, across awaits', async () => {
    const seen = await context.with(remote(TraceFlags.SAMPLED), () =>
      inLogContext({ proposal_id: 'p1' }, async () => {
        await Promise.resolve();
        const inLog = trace.getSpanContext(context.active())?.spanId;
        const inTrace = await continueTrace(context.active(), 'inner', SpanKind.INTERNAL, {}, async () => {
          await Promise.resolve();
          withLogFields({ command_id: 'c1' }, () => undefined);
          return { fields: { ...logFields() }, parent: trace.getActiveSpan()?.spanContext().traceId };
        });
        return { inLog, inTrace, after: { ...logFields() } };
      }),
    );

    expect(seen.inLog).toBe(PARENT);
    expect(seen.inTrace).toEqual({ fields: { proposal_id: 'p1', command_id: 'c1' }, parent: TRACE });
    expect(seen.after).toEqual({ proposal_id: 'p1', command_id: 'c1' });
    expect(logFields()).toEqual({});
  });

  it("given an event with trace metadata, when a reactor applies it, then the apply runs in the event's trace, with the reactor's log fields", async () => {
    const seen = await inLogContext(
      { reactor: 'r' },
      async () => {
        await Promise.resolve();
        await log.append('thing-5', [ev('e5')], 'no_stream');
        return { traceId: activeTraceId(), fields: { ...logFields() } };
      },
      eventTrace({ traceparent: `00-${TRACE}-${PARENT}-01` }),
    );

    expect(seen).toEqual({ traceId: TRACE, fields: { reactor: 'r' } });
    const [stored] = (await log.read('thing-5')).events;
    expect(stored.metadata).toEqual({ traceparent: `00-${TRACE}-${PARENT}-01` });
    expect(eventTrace(undefined)).toBeUndefined();
    expect(eventTrace({ other: 'x' })).toBeUndefined();
    // Malformed metadata gives no trace, not an error.
    expect(inLogContext({}, () => activeTraceId(), eventTrace({ traceparent: 'garbage' }))).toBeUndefined();
  });

  it('reads back what it writes: metadata with a tracestate, and rejects an invalid or all-zero traceparent', () => {
    const ctx = eventContext({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'a=1,b=2' });
    expect(trace.getSpanContext(ctx)).toMatchObject({ traceId: TRACE, spanId: PARENT, traceFlags: 1, isRemote: true });
    expect(context.with(ctx, traceMetadata)).toEqual({
      traceparent: `00-${TRACE}-${PARENT}-01`,
      tracestate: 'a=1,b=2',
    });
    expect(contextOfEvent({ traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` })).toBeUndefined();
    expect(contextOfEvent({ traceparent: 'garbage' })).toBeUndefined();
    expect(contextOfEvent({ other: 'x' })).toBeUndefined();
  });
});

describe('tracing with a sampler that is not parent-based', () => {
  const exporter = new tracing.InMemorySpanExporter();

  beforeAll(() => {
    process.env['OTEL_TRACES_SAMPLER'] = 'always_on';
    startTracing('test', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    delete process.env['OTEL_TRACES_SAMPLER'];
  });
  afterAll(() => stopTracing());

  it('given an unsampled caller, then the sampler still decides: always_on records the span', async () => {
    await continueTrace(remote(TraceFlags.NONE), 'timer t', SpanKind.INTERNAL, {}, async () => 1);
    expect((await finished(exporter, 1)).map((s) => s.name)).toEqual(['timer t']);
  });
});
