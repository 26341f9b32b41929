import { tracing } from '@opentelemetry/sdk-node';
import { connect, type Msg, type NatsConnection } from 'nats';
import { ConclaveClient } from './conclave-client';

/**
 * What the client puts on the wire beside the body, against the real NATS server, the service
 * played by the test: a header block only when there is something to carry.
 */
describe('ConclaveClient requests: headers', () => {
  let nc: NatsConnection;
  const prefix = `sdkh${Date.now().toString(36)}`;
  const received: Msg[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
    nc.subscribe(`${prefix}.>`, {
      callback: (_err, m) => {
        received.push(m);
        m.respond(new TextEncoder().encode(JSON.stringify({ ok: true, proposal: { proposal_id: 'P1' } })));
      },
    });
    await nc.flush();
  });
  afterAll(() => nc.close());
  beforeEach(() => {
    received.length = 0;
  });

  it('with neither a trace nor a signature, a request has no header block', async () => {
    const client = await ConclaveClient.connect({ nc, prefix });

    await client.get('P1');

    expect(received).toHaveLength(1);
    expect(received[0].headers).toBeUndefined();
  });

  it("with a signer, the signer's headers are sent", async () => {
    const client = await ConclaveClient.connect({ nc, prefix, sign: () => ({ 'Conclave-Signature': 'sig' }) });

    await client.get('P1');

    expect(received[0].headers?.get('Conclave-Signature')).toBe('sig');
    expect(received[0].headers?.has('traceparent')).toBe(false);
  });

  it('with a tracer provider that records, the request carries its traceparent', async () => {
    const exporter = new tracing.InMemorySpanExporter();
    const tracerProvider = new tracing.BasicTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    const client = await ConclaveClient.connect({ nc, prefix, tracerProvider });

    await client.get('P1');

    const [span] = exporter.getFinishedSpans();
    expect(received[0].headers?.get('traceparent')).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });
});

describe('ConclaveClient: a connection of its own', () => {
  it('given a client that connects itself, its connection reconnects without limit and builds no stack trace per request', async () => {
    const client = await ConclaveClient.connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
    try {
      // nats.js keeps the options it connected with; the defaults would give up after 10 attempts.
      const options = (client.nc as unknown as { options: { maxReconnectAttempts?: number; noAsyncTraces?: boolean } }).options;

      expect(options.maxReconnectAttempts).toBe(-1);
      expect(options.noAsyncTraces).toBe(true);
    } finally {
      await client.close();
    }
  });
});
