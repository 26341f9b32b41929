import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type TextMapGetter,
} from '@opentelemetry/api';
import type { EventMetadata } from '@conclave/event-log';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import type { MsgHdrs } from 'nats';
import { idIn } from './logging';
import type { RequestObserver } from './metrics-requests';

const TRACER = 'conclave';
let sdk: NodeSDK | undefined;

/**
 * Tracing is off unless the standard variables ask for it: OTEL_TRACES_EXPORTER (other than
 * `none`) or an OTLP endpoint, and not OTEL_SDK_DISABLED=true. Off, nothing is started and the
 * instrumented paths skip their tracing code.
 */
export function tracingWantedBy(env: Record<string, string | undefined>): boolean {
  if (env['OTEL_SDK_DISABLED'] === 'true') return false;
  const exporter = env['OTEL_TRACES_EXPORTER']?.trim();
  if (exporter) return exporter !== 'none';
  return !!(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}

/** True once the process traces (one tracer provider per process, whichever service started it). */
export function tracingOn(): boolean {
  return sdk !== undefined;
}

/**
 * Starts OpenTelemetry's Node SDK for traces only (the exporter, its endpoint, sampling and
 * propagators from the OTEL_* variables; W3C traceparent by default). Metrics stay Prometheus
 * and logs pino. `spanProcessors` replaces the exporter (tests: an in-memory one).
 */
export function startTracing(service: string, options: { spanProcessors?: tracing.SpanProcessor[] } = {}): void {
  if (sdk) return;
  sdk = new NodeSDK({
    serviceName: process.env['OTEL_SERVICE_NAME'] ?? `conclave-${service}`,
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
}

/** Ends tracing and unregisters it (tests; a service flushes on shutdown instead). */
export async function stopTracing(): Promise<void> {
  const s = sdk;
  sdk = undefined;
  await s?.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
}

/** Exports what is buffered when a service shuts down (the provider may be shared: not shut). */
@Injectable()
export class TracingFlush implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
    if (tracingOn())
      await provider
        .getDelegate?.()
        .forceFlush?.()
        .catch(() => undefined);
  }
}

const natsGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (h) => (h ? [...h.keys()] : []),
  get: (h, key) => h?.get(key) || undefined,
};

/**
 * A SERVER span per NATS API request, continuing the trace of the request's `traceparent`; the
 * handler runs inside it, so appends and log lines join it. A reply `{ok: false}` is marked
 * with its code; INTERNAL and a throw mark the span as failed.
 */
export function tracingObserver(): RequestObserver {
  return {
    around(request, handle) {
      if (!tracingOn()) return handle();
      const parent = propagation.extract(ROOT_CONTEXT, request.headers, natsGetter);
      const attributes: Record<string, string> = {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': request.subject,
      };
      const proposal = idIn(request.body, 'proposal_id');
      const run = idIn(request.body, 'run_id');
      if (proposal) attributes['conclave.proposal_id'] = proposal;
      if (run) attributes['conclave.run_id'] = run;
      const span = trace.getTracer(TRACER).startSpan(request.pattern, { kind: SpanKind.SERVER, attributes }, parent);
      return context.with(trace.setSpan(parent, span), async () => {
        try {
          const reply = await handle();
          const code = codeOf(reply);
          if (code) {
            span.setAttribute('conclave.error_code', code);
            if (code === 'INTERNAL') span.setStatus({ code: SpanStatusCode.ERROR, message: code });
          }
          return reply;
        } catch (err) {
          // A refusal (an AcpError's code) is the caller's; only INTERNAL or an untyped throw fails the span.
          const code = (err as { code?: unknown })?.code;
          if (typeof code === 'string' && code !== 'INTERNAL') span.setAttribute('conclave.error_code', code);
          else fail(span, err);
          throw err;
        } finally {
          span.end();
        }
      });
    },
  };
}

/** Runs `fn` in a child span of the active one (an append, a publish); without tracing, just `fn`. */
export function traced<T>(name: string, kind: SpanKind, attributes: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  return trace.getTracer(TRACER).startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * A PRODUCER span around one publish, its `traceparent` handed to `send` for the message's
 * headers: a consumer continues the trace from the message it reads. `parent` defaults to the
 * active context (an outbox passes the one its log event carried).
 */
export async function producerSpan<T>(
  name: string,
  attributes: Record<string, string>,
  send: (carrier: Record<string, string>) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  const span = trace.getTracer(TRACER).startSpan(name, { kind: SpanKind.PRODUCER, attributes }, parent);
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), carrier);
  try {
    return await send(carrier);
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The active trace context as event metadata (`traceparent`, and `tracestate` when there is one),
 * for an append to store beside its events; undefined without tracing or an active span.
 */
export function traceMetadata(): Record<string, string> | undefined {
  if (!tracingOn() || !trace.getActiveSpan()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

const metadataGetter: TextMapGetter<EventMetadata | undefined> = {
  keys: (m) => (m ? Object.keys(m) : []),
  get: (m, key) => m?.[key],
};

/** The trace context a log event's metadata carries; undefined when it carries none (or tracing is off). */
export function contextOfEvent(metadata: EventMetadata | undefined): Context | undefined {
  if (!tracingOn() || !metadata) return undefined;
  const ctx = propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
  return trace.getSpanContext(ctx) ? ctx : undefined;
}

/**
 * Runs `fn` in the trace context a log event's metadata carries (none: as it is). No span of its
 * own: a reactor applies every event it follows, most without acting on it, and a span per event
 * per reactor would cost more than all the others together; what it does about the event (a timer,
 * an append) makes the spans.
 */
export function inEventTrace<T>(metadata: EventMetadata | undefined, fn: () => T): T {
  const parent = contextOfEvent(metadata);
  return parent ? context.with(parent, fn) : fn();
}

/**
 * Runs `fn` inside a new span that continues `parent` (a log event's trace, a timer's): only when
 * there is such a parent, so work nobody traced starts no trace of its own.
 */
export function continueTrace<T>(
  parent: Context | undefined,
  name: string,
  kind: SpanKind,
  attributes: Record<string, string>,
  fn: () => T | Promise<T>,
): Promise<T> {
  if (!parent) {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return trace.getTracer(TRACER).startActiveSpan(name, { kind, attributes }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The active context when tracing is on and a span is active (kept by a timer for its action). */
export function activeTraceContext(): Context | undefined {
  if (!tracingOn() || !trace.getActiveSpan()) return undefined;
  return context.active();
}

/** The active span's trace id, when tracing is on and a span is active. */
export function activeTraceId(): string | undefined {
  if (!tracingOn()) return undefined;
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

function fail(span: Span, err: unknown): void {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string') span.setAttribute('conclave.error_code', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code === undefined ? 'failed' : String(code) });
}

function codeOf(reply: unknown): string | undefined {
  if (!reply || typeof reply !== 'object' || (reply as { ok?: unknown }).ok !== false) return undefined;
  const code = (reply as { error?: { code?: unknown } }).error?.code;
  return typeof code === 'string' ? code : undefined;
}
