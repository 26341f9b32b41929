import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { headers as natsHeaders, type MsgHdrs } from 'nats';
import { acpStreamNames } from '@conclave/messaging';
import { JetStreamEventLog } from '@conclave/event-log';
import { startTracing, stopTracing, tracingOn, tracingWantedBy } from '@conclave/service-kit';
import { ConclaveHarness, eventually } from '../support/conclave-harness';

describe('tracing is off unless the OTEL_* variables ask for it', () => {
  it('needs an exporter or an endpoint, and yields to OTEL_SDK_DISABLED', () => {
    expect(tracingWantedBy({})).toBe(false);
    expect(tracingWantedBy({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
    expect(tracingWantedBy({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingWantedBy({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingWantedBy({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingWantedBy({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });
});

/**
 * A real intake with tracing on (an in-memory exporter instead of OTLP): a request carrying a
 * W3C traceparent gets a SERVER span in the caller's trace, and the event-log append it makes is
 * that span's child; each outbox message carries the traceparent of its PRODUCER span.
 */
describe('tracing: NATS API requests continue the caller trace', () => {
  const exporter = new tracing.InMemorySpanExporter();
  const h = new ConclaveHarness();

  beforeAll(async () => {
    startTracing('intake', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    await h.start('intake', 'resolver');
  });
  afterAll(async () => {
    await h.stop();
    await stopTracing();
  });

  /** A proposal sent as plain JSON over NATS with these headers; the reply. */
  const propose = async (hdrs: MsgHdrs): Promise<{ ok: boolean; proposal?: { proposal_id: string } }> => {
    const body = {
      schema_version: '1.0',
      type: 'proposal',
      domain: 'ops.deploy',
      author: 'agent-ops',
      payload: { action: 'deploy' },
      quorum: 2,
      expires_at: null,
      created_at: new Date().toISOString(),
    };
    const msg = await h.nc.request(`${h.prefix}.v1.propose`, new TextEncoder().encode(JSON.stringify(body)), {
      timeout: 5_000,
      headers: hdrs,
    });
    return JSON.parse(new TextDecoder().decode(msg.data));
  };

  it('one SERVER span per request, child of the traceparent; the append is an event on it', async () => {
    expect(tracingOn()).toBe(true);
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const hdrs = natsHeaders();
    hdrs.set('traceparent', `00-${traceId}-${callerSpan}-01`);
    const reply = await propose(hdrs);
    expect(reply).toMatchObject({ ok: true });

    const server = await eventually(async () => exporter.getFinishedSpans().find((s) => s.name === 'v1.propose'), 5_000, 'the server span');
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(server.spanContext().traceId).toBe(traceId);
    expect(server.parentSpanContext?.spanId).toBe(callerSpan);
    expect(server.attributes).toMatchObject({ 'messaging.system': 'nats', 'messaging.destination.name': `${h.prefix}.v1.propose` });

    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([
      ['eventlog.append', { 'conclave.category': 'proposal', 'conclave.append.outcome': 'ok' }],
    ]);
    // No span of its own: what else the trace holds continues the request's span (the proposal feed's publish).
    const others = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s !== server);
    for (const s of others) expect([s.name, s.parentSpanContext?.spanId]).toEqual(['publish resolver-outbox', server.spanContext().spanId]);
  });

  it("the resolver's outbox publishes each decision under a PRODUCER span whose traceparent the message carries", async () => {
    const now = new Date().toISOString();
    const p = await h.client.propose({ domain: 'risk.credit', author: 'agent-risk', payload: { action: 'x' }, quorum: 1, created_at: now });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 });
    const jsm = await h.nc.jetstreamManager();
    const stream = acpStreamNames(h.run).decisions;
    const msg = await eventually(
      async () => jsm.streams.getMessage(stream, { last_by_subj: `${h.prefix}.v1.decisions.risk.credit` }).catch(() => undefined),
      10_000,
      'the decision message',
    );
    const traceparent = msg.header?.get('traceparent') ?? '';
    const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent) ?? [];
    expect(traceId).toBeDefined();
    const producer = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === spanId);
    expect(producer?.name).toBe('publish resolver-outbox');
    expect(producer?.kind).toBe(SpanKind.PRODUCER);
    expect(producer?.spanContext().traceId).toBe(traceId);
    expect(producer?.attributes).toMatchObject({
      'messaging.destination.name': `${h.prefix}.v1.decisions.risk.credit`,
      'messaging.message.id': msg.header?.get('Nats-Msg-Id'),
    });
  });

  it("a refused request is marked with its code but not failed, on the service's span and the SDK's", async () => {
    exporter.reset();
    await expect(h.client.get('01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
    const span = await eventually(async () => exporter.getFinishedSpans().find((s) => s.name === 'v1.get'), 5_000, 'the get span');
    expect(span.attributes).toMatchObject({
      'conclave.error_code': 'PROPOSAL_NOT_FOUND',
      'conclave.proposal_id': '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    });
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
    // The SDK sent its own CLIENT span's traceparent: the service's span is that span's child.
    const client = exporter.getFinishedSpans().find((s) => s.name === `${h.prefix}.v1.get`);
    expect(client?.kind).toBe(SpanKind.CLIENT);
    expect(client?.attributes).toMatchObject({ 'conclave.error_code': 'PROPOSAL_NOT_FOUND' });
    expect(client?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(span.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
    expect(span.spanContext().traceId).toBe(client?.spanContext().traceId);
  });

  it("given a request with W3C baggage of 2 KiB and a tracestate, when it proposes, then it is recorded in the caller's trace and the log keeps the trace context, not the baggage", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const hdrs = natsHeaders();
    hdrs.set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`);
    hdrs.set('tracestate', Array.from({ length: 12 }, (_, i) => `vendor${i}=${'v'.repeat(30)}`).join(','));
    // Valid W3C baggage (8 KiB allowed): more than the 512 characters an event's metadata takes.
    hdrs.set('baggage', Array.from({ length: 16 }, (_, i) => `key${i}=${'b'.repeat(120)}`).join(','));
    const reply = await propose(hdrs);
    expect(reply).toMatchObject({ ok: true });

    const log = await JetStreamEventLog.create({
      connection: h.nc,
      streamName: h.env['CONCLAVE_EVENT_STREAM'],
      subjectPrefix: h.env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
      createStream: false,
    });
    const [submitted] = (await log.read(`proposal-${reply.proposal?.proposal_id}`)).events;
    const server = exporter.getFinishedSpans().find((s) => s.name === 'v1.propose' && s.spanContext().traceId === traceId);
    expect(submitted.metadata).toEqual({
      traceparent: `00-${traceId}-${server?.spanContext().spanId}-01`,
      tracestate: hdrs.get('tracestate'),
    });
  });

  it('a request without traceparent (not from the SDK) starts a new trace', async () => {
    exporter.reset();
    const body = new TextEncoder().encode(JSON.stringify({ proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }));
    await h.nc.request(`${h.prefix}.v1.get`, body, { timeout: 5_000 });
    const span = await eventually(async () => exporter.getFinishedSpans().find((s) => s.name === 'v1.get'), 5_000, 'the get span');
    expect(span.parentSpanContext).toBeUndefined();
  });
});

/**
 * The whole path of one decision in one trace: an agent's span around its SDK call, the SDK's
 * CLIENT span, intake's SERVER span and its append, the resolver's timer that resolves (its
 * reactor read the event and scheduled it in the append's trace), the resolution's append, and
 * the outbox's PRODUCER span whose traceparent the decision message carries. Each span is the
 * child of the one before it.
 */
describe('tracing: one trace from the SDK call to the decision publish', () => {
  const exporter = new tracing.InMemorySpanExporter();
  const h = new ConclaveHarness();

  beforeAll(async () => {
    startTracing('intake', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    await h.start('intake', 'resolver');
  });
  afterAll(async () => {
    await h.stop();
    await stopTracing();
  });

  it("given a proposal needing one endorsement, when an agent endorses it inside its own span, the decision message continues that trace, and so does a reader's receipt of it", async () => {
    const p = await h.client.propose({
      domain: 'ops.tracing',
      author: 'agent-ops',
      payload: { action: 'trace' },
      quorum: 1,
      created_at: new Date().toISOString(),
    });
    exporter.reset();

    const agentTraceId = await trace.getTracer('agent').startActiveSpan('agent decides', async (agent) => {
      await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 });
      agent.end();
      return agent.spanContext().traceId;
    });

    const jsm = await h.nc.jetstreamManager();
    const msg = await eventually(
      async () =>
        jsm.streams
          .getMessage(acpStreamNames(h.run).decisions, { last_by_subj: `${h.prefix}.v1.decisions.ops.tracing` })
          .catch(() => undefined),
      10_000,
      'the decision message',
    );
    const [, traceId, publishSpanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(msg.header?.get('traceparent') ?? '') ?? [];
    expect(traceId).toBe(agentTraceId);

    const byId = (spanId: string | undefined) => exporter.getFinishedSpans().find((s) => s.spanContext().spanId === spanId);
    const publish = await eventually(async () => byId(publishSpanId), 5_000, 'the publish span');
    // Walk the parent links from the publish back to the agent's span.
    const chain: { name: string; kind: SpanKind; traceId: string; events: string[] }[] = [];
    for (let span = publish as ReturnType<typeof byId>; span; span = byId(span.parentSpanContext?.spanId)) {
      chain.push({ name: span.name, kind: span.kind, traceId: span.spanContext().traceId, events: span.events.map((e) => e.name) });
    }
    expect(chain.map((s) => [s.name, s.kind])).toEqual([
      ['publish resolver-outbox', SpanKind.PRODUCER],
      ['timer resolver', SpanKind.INTERNAL],
      ['v1.respond', SpanKind.SERVER],
      [`${h.prefix}.v1.respond`, SpanKind.CLIENT],
      ['agent decides', SpanKind.INTERNAL],
    ]);
    expect(new Set(chain.map((s) => s.traceId))).toEqual(new Set([agentTraceId]));
    // The appends on the way are events on the spans they ran in: the response, then the resolution.
    expect(chain.filter((s) => s.events.length).map((s) => [s.name, s.events])).toEqual([
      ['timer resolver', ['eventlog.append']],
      ['v1.respond', ['eventlog.append']],
    ]);
    expect(publish.attributes).toMatchObject({
      'messaging.destination.name': `${h.prefix}.v1.decisions.ops.tracing`,
      'messaging.message.id': msg.header?.get('Nats-Msg-Id'),
    });

    // The events in the log carry the trace context of the spans their appends ran in.
    const log = await JetStreamEventLog.create({
      connection: h.nc,
      streamName: h.env['CONCLAVE_EVENT_STREAM'],
      subjectPrefix: h.env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
      createStream: false,
    });
    const stored = await log.read(`proposal-${p.proposal_id}`);
    const endorsed = stored.events.find((e) => e.event.type === 'ResponseRecorded');
    const respond = exporter.getFinishedSpans().find((s) => s.name === 'v1.respond' && s.spanContext().traceId === agentTraceId);
    expect(endorsed?.metadata?.['traceparent']).toBe(`00-${agentTraceId}-${respond?.spanContext().spanId}-01`);

    // A consumer's receipt: a CONSUMER span continuing the publish, lasting while the loop body runs.
    const reader = h.client.decisions({ domain: 'ops.tracing', from: 'all' });
    for await (const d of reader) {
      if (d.proposal_id === p.proposal_id) break;
    }
    const received = await eventually(
      async () => exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CONSUMER && s.parentSpanContext?.spanId === publishSpanId),
      5_000,
      'the receive span',
    );
    expect(received.name).toBe(`receive ${h.prefix}.v1.decisions.ops.tracing`);
    expect(received.spanContext().traceId).toBe(agentTraceId);
  });
});
