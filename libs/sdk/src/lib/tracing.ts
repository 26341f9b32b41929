import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { w3cSpanContext, w3cTraceparent } from '@conclave/messaging';
import { headers, type MsgHdrs } from 'nats';

const TRACER = 'conclave-sdk';

/**
 * The SDK's tracer: from the provider the application gave (as OpenTelemetry instrumentations
 * take one), else from the globally registered one.
 */
export function sdkTracer(provider?: TracerProvider): Tracer {
  return (provider ?? trace.getTracerProvider()).getTracer(TRACER);
}

/**
 * Sends one request in a CLIENT span and with its W3C `traceparent` header, so the services
 * continue the caller's trace. The span continues the active OpenTelemetry context; it is
 * recorded when the application registered an OpenTelemetry SDK, and otherwise only carries the
 * ids along. With neither an SDK nor an active trace there is no trace to continue, and no header:
 * the service that handles the request starts the trace, and its sampler decides whether it is
 * recorded (a trace started here would have to decide, and a parent-based sampler downstream
 * would follow). The header is not signed: it names a trace, it authorizes nothing.
 */
export async function withTraceHeaders<T>(tracer: Tracer, subject: string, send: (h: MsgHdrs) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(subject, {
    kind: SpanKind.CLIENT,
    attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
  });
  const h = headers();
  const c = span.spanContext();
  if (trace.isSpanContextValid(c)) {
    h.append('traceparent', w3cTraceparent(c));
    const state = c.traceState?.serialize();
    if (state) h.append('tracestate', state);
  }
  try {
    return await send(h);
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    if (typeof code === 'string') span.setAttribute('conclave.error_code', code);
    // A refusal is an answer; only no answer (or a broken one) fails the call.
    if (typeof code !== 'string' || code === 'INTERNAL')
      span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : 'failed' });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A CONSUMER span for one stream message a reader received, continuing the trace its W3C
 * `traceparent` header carries (the outbox's publish); the caller ends it when the message is
 * handled. Recorded only where the application gave or registered an OpenTelemetry SDK; a message
 * without the header starts no trace.
 */
export function receiveSpan(tracer: Tracer, subject: string, h: MsgHdrs | undefined): Span | undefined {
  // Parsed here, not by the global propagator: a tracer provider given to the client works without
  // one registered. (Services configured with another propagator than W3C's break the chain here.)
  const spanContext = w3cSpanContext(h?.get('traceparent'), h?.get('tracestate') || undefined);
  if (!spanContext) return undefined;
  const parent = trace.setSpanContext(ROOT_CONTEXT, spanContext);
  return tracer.startSpan(
    `receive ${subject}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { 'messaging.system': 'nats', 'messaging.operation.type': 'receive', 'messaging.destination.name': subject },
    },
    parent,
  );
}
