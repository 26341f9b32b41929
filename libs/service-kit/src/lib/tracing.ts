import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type ContextManager,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import type { EventMetadata } from '@conclave/event-log';
import { w3cSpanContext, w3cTraceparent } from '@conclave/messaging';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import type { MsgHdrs } from 'nats';
import { idIn, storedTraceContext, withTraceContext } from './logging';
import type { RequestObserver } from './metrics-requests';

const TRACER = 'conclave';
let sdk: NodeSDK | undefined;
/** The SDK's tracer, looked up once per start rather than per span. */
let tracer: Tracer | undefined;
const tracerOf = (): Tracer => (tracer ??= trace.getTracer(TRACER));
/**
 * The sampler follows the parent's decision (OTEL_TRACES_SAMPLER unset, or `parentbased_*`): a
 * span under an unsampled parent would be dropped, so none is made; the parent's context is
 * passed on as it is (same trace id, for the log lines and the next hop).
 */
let parentBased = false;

/** The sampled flag of the W3C trace context. */
const SAMPLED = 0x01;

/** A span made under `parent` would be dropped: the sampler is parent-based and the parent unsampled. */
function dropsUnder(parent: Context): boolean {
  if (!parentBased) return false;
  const c = trace.getSpanContext(parent);
  return c !== undefined && (c.traceFlags & SAMPLED) === 0 && trace.isSpanContextValid(c);
}

/**
 * OpenTelemetry's context kept in the same AsyncLocalStorage as the log fields (logging.ts), in
 * place of the SDK's own: one store copied onto every promise instead of two.
 */
class SharedContextManager implements ContextManager {
  active(): Context {
    const stored = storedTraceContext();
    if (stored === undefined) return ROOT_CONTEXT;
    return stored instanceof EventTrace ? stored.context() : (stored as Context);
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return withTraceContext(ctx, thisArg === undefined && args.length === 0 ? (fn as () => ReturnType<F>) : () => fn.apply(thisArg, args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (self: unknown, args: unknown[]) => withTraceContext(ctx, () => (target as (...a: unknown[]) => unknown).apply(self, args));
    return function (this: unknown, ...args: unknown[]) {
      return run(this, args);
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    return this;
  }
}

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
  tracer = undefined;
  const sampler = process.env['OTEL_TRACES_SAMPLER']?.trim();
  parentBased = !sampler || sampler.startsWith('parentbased_');
  sdk = new NodeSDK({
    serviceName: process.env['OTEL_SERVICE_NAME'] ?? `conclave-${service}`,
    instrumentations: [],
    contextManager: new SharedContextManager(),
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
  tracer = undefined;
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
 * with its code; INTERNAL and a throw mark the span as failed. A span the sampler drops gets no
 * attributes and no code (nothing would keep them).
 */
export function tracingObserver(): RequestObserver {
  return {
    around(request, handle) {
      if (!tracingOn()) return handle();
      const parent = propagation.extract(ROOT_CONTEXT, request.headers, natsGetter);
      if (dropsUnder(parent)) return context.with(parent, handle);
      const span = tracerOf().startSpan(request.pattern, { kind: SpanKind.SERVER }, parent);
      if (!span.isRecording()) return context.with(trace.setSpan(parent, span), handle);
      const attributes: Attributes = {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': request.subject,
      };
      const proposal = idIn(request.body, 'proposal_id');
      const run = idIn(request.body, 'run_id');
      if (proposal) attributes['conclave.proposal_id'] = proposal;
      if (run) attributes['conclave.run_id'] = run;
      span.setAttributes(attributes);
      return settle(
        span,
        () => context.with(trace.setSpan(parent, span), handle),
        (reply) => {
          const code = codeOf(reply);
          if (code) {
            span.setAttribute('conclave.error_code', code);
            if (code === 'INTERNAL') span.setStatus({ code: SpanStatusCode.ERROR, message: code });
          }
        },
        (err) => {
          // A refusal (an AcpError's code) is the caller's; only INTERNAL or an untyped throw fails the span.
          const code = (err as { code?: unknown })?.code;
          if (typeof code === 'string' && code !== 'INTERNAL') span.setAttribute('conclave.error_code', code);
          else fail(span, err);
        },
      );
    },
  };
}

/**
 * Runs `fn` (inside the span's context, as the caller arranges) and ends `span` when its promise
 * settles: `then` handlers on the promise `fn` returns instead of an `async` wrapper, whose extra
 * promises every request, append and publish would pay for.
 */
function settle<T>(
  span: Span,
  fn: () => Promise<T>,
  onValue: (value: T) => void = () => undefined,
  onError: (err: unknown) => void = (err) => fail(span, err),
): Promise<T> {
  let p: Promise<T>;
  try {
    p = fn();
  } catch (err) {
    onError(err);
    span.end();
    return Promise.reject(err);
  }
  return p.then(
    (value) => {
      onValue(value);
      span.end();
      return value;
    },
    (err: unknown) => {
      onError(err);
      span.end();
      throw err;
    },
  );
}

/** The active span when tracing is on and the sampler keeps it (for an event on it); else undefined. */
export function recordingSpan(): Span | undefined {
  if (!tracingOn()) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * A PRODUCER span around one publish, its `traceparent` handed to `send` for the message's
 * headers: a consumer continues the trace from the message it reads. `parent` defaults to the
 * active context (an outbox passes the one its log event carried).
 */
export function producerSpan<T>(
  name: string,
  attributes: Attributes,
  send: (carrier: Record<string, string>) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  const carrier: Record<string, string> = {};
  if (dropsUnder(parent)) {
    propagation.inject(parent, carrier);
    return send(carrier);
  }
  const span = tracerOf().startSpan(name, { kind: SpanKind.PRODUCER }, parent);
  if (span.isRecording()) span.setAttributes(attributes);
  propagation.inject(trace.setSpan(parent, span), carrier);
  return settle(span, () => send(carrier));
}

/**
 * The active trace context as event metadata (`traceparent`, and `tracestate` when there is one),
 * for an append to store beside its events; undefined without tracing or an active span. The
 * log always carries W3C trace context, written and read here (OTEL_PROPAGATORS applies to NATS
 * messages): formatting it directly costs a fraction of the propagators' inject. A request's
 * baggage is not stored: it is the caller's data (up to 8 KiB by W3C, past what the log's metadata
 * takes, so an append would fail), and the immutable log keeps only what the services vouch for.
 * OpenTelemetry parses a `tracestate` of at most 512 characters of printable ASCII, which the
 * log's metadata takes.
 */
export function traceMetadata(): Record<string, string> | undefined {
  if (!tracingOn()) return undefined;
  const c = trace.getSpanContext(context.active());
  if (!c || !trace.isSpanContextValid(c)) return undefined;
  const metadata: Record<string, string> = { traceparent: w3cTraceparent(c) };
  const state = c.traceState?.serialize();
  if (state) metadata['tracestate'] = state;
  return metadata;
}

const metadataGetter: TextMapGetter<EventMetadata | undefined> = {
  keys: (m) => (m ? Object.keys(m) : []),
  get: (m, key) => m?.[key],
};

/**
 * The trace context a log event's metadata carries; undefined when it carries none (or tracing is
 * off). The usual metadata (a W3C `traceparent`, perhaps a `tracestate`) is parsed here; anything
 * else (baggage, another format) goes through the configured propagators.
 */
export function contextOfEvent(metadata: EventMetadata | undefined): Context | undefined {
  if (!tracingOn() || !metadata) return undefined;
  const traceparent = metadata['traceparent'];
  if (traceparent === undefined) return undefined;
  const keys = Object.keys(metadata).length;
  const state = metadata['tracestate'];
  if (keys === 1 || (keys === 2 && state !== undefined)) {
    const spanContext = w3cSpanContext(traceparent, state);
    return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : undefined;
  }
  const ctx = propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
  return trace.getSpanContext(ctx) ? ctx : undefined;
}

/**
 * The trace context a log event's metadata carries, parsed when first asked for. A reactor
 * applies every event it follows in its event's trace, most without acting on it: only what does
 * act (a timer, an append, a log line's trace id) reads the context, so most events cost no parse.
 */
class EventTrace {
  private parsed: Context | undefined;

  constructor(private readonly metadata: EventMetadata) {}

  context(): Context {
    return (this.parsed ??= contextOfEvent(this.metadata) ?? ROOT_CONTEXT);
  }
}

/**
 * The trace context to apply a log event in, for `inLogContext`: undefined without tracing or
 * without trace metadata. No span of its own: a span per event per reactor would cost more than
 * all the others together; what the reactor does about the event (a timer, an append) makes them.
 */
export function eventTrace(metadata: EventMetadata | undefined): unknown {
  if (!tracingOn() || metadata?.['traceparent'] === undefined) return undefined;
  return new EventTrace(metadata);
}

/**
 * Runs `fn` inside a new span that continues `parent` (a log event's trace, a timer's): only when
 * there is such a parent, so work nobody traced starts no trace of its own.
 */
export function continueTrace<T>(
  parent: Context | undefined,
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: () => T | Promise<T>,
): Promise<T> {
  if (!parent) {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err);
    }
  }
  if (dropsUnder(parent)) {
    try {
      return Promise.resolve(context.with(parent, fn));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  const span = tracerOf().startSpan(name, { kind }, parent);
  if (span.isRecording()) span.setAttributes(attributes);
  return settle(span, () => Promise.resolve(context.with(trace.setSpan(parent, span), fn)));
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
