import { tracing } from '@opentelemetry/sdk-node';
import { headers } from 'nats';
import { receiveSpan, sdkTracer, withTraceHeaders } from './tracing';

describe('the SDK sends a W3C traceparent on every request', () => {
  it('given no OpenTelemetry SDK and no active trace, a request carries no traceparent: the service starts the trace and samples it', async () => {
    const sent = await withTraceHeaders(sdkTracer(), 'acp.v1.propose', async (h) => [h.get('traceparent'), h.get('tracestate')]);
    expect(sent).toEqual(['', '']);
  });

  it('passes the reply or the refusal through unchanged', async () => {
    await expect(withTraceHeaders(sdkTracer(), 'acp.v1.get', async () => ({ ok: true }))).resolves.toEqual({ ok: true });
    const refusal = Object.assign(new Error('PROPOSAL_NOT_FOUND: no such proposal'), { code: 'PROPOSAL_NOT_FOUND' });
    await expect(withTraceHeaders(sdkTracer(), 'acp.v1.get', async () => Promise.reject(refusal))).rejects.toBe(refusal);
  });

  it('given a tracer provider of its own, the spans go there, and the request carries their ids', async () => {
    const exporter = new tracing.InMemorySpanExporter();
    const provider = new tracing.BasicTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    const sent = await withTraceHeaders(sdkTracer(provider), 'acp.v1.propose', async (h) => h.get('traceparent'));
    const [span] = exporter.getFinishedSpans();
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    expect(span.name).toBe('acp.v1.propose');
    expect(sent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);

    const h = headers();
    h.set('traceparent', sent);
    receiveSpan(sdkTracer(provider), 'acp.v1.decisions.x', h)?.end();
    const received = exporter.getFinishedSpans()[1];
    expect(received.name).toBe('receive acp.v1.decisions.x');
    expect(received.spanContext().traceId).toBe(span.spanContext().traceId);
    expect(received.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
    await provider.shutdown();
  });
});
