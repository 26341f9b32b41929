import { createTraceState, trace, type SpanContext } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The remote span context a W3C `traceparent` (and `tracestate`) names; undefined when it is
 * malformed or all zeros. Parsed here rather than by the configured propagators: the event log's
 * metadata and the SDK's headers are always W3C, and this costs a fraction of an extract.
 */
export function w3cSpanContext(traceparent: string | undefined, tracestate?: string): SpanContext | undefined {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return undefined;
  const spanContext: SpanContext = {
    traceId: m[1],
    spanId: m[2],
    traceFlags: parseInt(m[3], 16),
    isRemote: true,
    ...(tracestate ? { traceState: createTraceState(tracestate) } : {}),
  };
  return trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** A span context as a W3C `traceparent` (version 00): the one way Conclave writes one. */
export function w3cTraceparent(c: Pick<SpanContext, 'traceId' | 'spanId' | 'traceFlags'>): string {
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
