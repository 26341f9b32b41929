import { councilSubjects } from '@conclave/messaging';
import { connect, type Msg, type NatsConnection } from 'nats';
import { ConclaveClient } from './conclave-client';
import { ConclaveError } from './conclave-error';
import { CouncilClient, CouncilRequestError } from './council-member';

const enc = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
const refusal = { ok: false, error: { code: 'RATE_LIMITED', message: 'too many commands', retry_after_ms: 50 } };

/**
 * Both SDK clients with a request path of their own (ConclaveClient, CouncilClient) resend a
 * RATE_LIMITED refusal the same way, against the real NATS server with the service played by the
 * test: refused `refusals` times, then answered.
 */
describe('SDK clients: a RATE_LIMITED refusal is resent after its hint, signed afresh', () => {
  let nc: NatsConnection;
  const prefix = `sdkrl${Date.now().toString(36)}`;
  const received: Msg[] = [];
  let refusals = 0;

  beforeAll(async () => {
    nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
    nc.subscribe(`${prefix}.>`, {
      callback: (_err, m) => {
        received.push(m);
        m.respond(enc(received.length <= refusals ? refusal : { ok: true, run_id: 'run-1', participants: [] }));
      },
    });
    await nc.flush();
  });
  afterAll(() => nc.close());
  beforeEach(() => {
    received.length = 0;
  });

  let signed = 0;
  const signer = () => ({ 'Conclave-Participant': 'agent-a', 'Conclave-Nonce': `nonce-${++signed}-0123456789abcdef` });
  const nonces = () => received.map((m) => m.headers?.get('Conclave-Nonce'));

  it('given ConclaveClient.call refused twice, then it is answered on the third attempt, each with a new signature and the same body', async () => {
    refusals = 2;
    const client = await ConclaveClient.connect({ nc, prefix, sign: signer });

    await expect(client.call('v1.participants.list', { limit: 3 })).resolves.toMatchObject({ ok: true });

    expect(received).toHaveLength(3);
    expect(new Set(nonces()).size).toBe(3);
    expect(new Set(received.map((m) => new TextDecoder().decode(m.data)))).toEqual(new Set(['{"limit":3}']));
  });

  it('given ConclaveClient with rateLimitWaitMs 0, then the refusal is thrown as a ConclaveError with retryAfterMs after one attempt', async () => {
    refusals = 1;
    const client = await ConclaveClient.connect({ nc, prefix, sign: signer, rateLimitWaitMs: 0 });

    await expect(client.escalate('P1', { reason: 'r', requested_by: 'agent-a' })).rejects.toMatchObject({
      name: 'ConclaveError',
      code: 'RATE_LIMITED',
      retryAfterMs: 50,
    });
    expect(received).toHaveLength(1);
    await expect(client.call('v1.participants.list')).resolves.toMatchObject({ ok: true });
  });

  it('given CouncilClient refused once, then start is answered on the second attempt, signed afresh; with rateLimitWaitMs 0 it throws CouncilRequestError with retryAfterMs', async () => {
    refusals = 1;
    const council = new CouncilClient(nc, prefix, { signer });

    await expect(council.start({ goal_contract: {}, panel: [] })).resolves.toBe('run-1');
    expect(received.map((m) => m.subject)).toEqual([councilSubjects(prefix).start, councilSubjects(prefix).start]);
    expect(new Set(nonces()).size).toBe(2);

    received.length = 0;
    const impatient = new CouncilClient(nc, prefix, { signer, rateLimitWaitMs: 0 });
    const thrown = await impatient.start({ goal_contract: {}, panel: [] }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(CouncilRequestError);
    expect(thrown).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 50 });
    expect(thrown).not.toBeInstanceOf(ConclaveError);
    expect(received).toHaveLength(1);
  });
});
