import { headers } from 'nats';
import { ConclaveClient, ConclaveError } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

const CAROL_TOKEN = 'carol-token-0123456789abcdefghijklmnopqrstuvwxyz';
const PER_SECOND = 5;
const BURST = 20;
const now = () => new Date().toISOString();
const encode = (body: unknown) => new TextEncoder().encode(JSON.stringify(body));
const decode = (data: Uint8Array) => JSON.parse(new TextDecoder().decode(data));

/** How each of `calls` ended: 'ok' or the refusal's code (with the retry hints of RATE_LIMITED). */
async function outcomes(calls: Array<Promise<unknown>>): Promise<{ codes: string[]; retryHints: number[] }> {
  const settled = await Promise.allSettled(calls);
  const retryHints: number[] = [];
  const codes = settled.map((s) => {
    if (s.status === 'fulfilled') return 'ok';
    const err = s.reason as ConclaveError;
    if (err.retryAfterMs !== undefined) retryHints.push(err.retryAfterMs);
    return err.code ?? String(err);
  });
  return { codes, retryHints };
}

const count = (codes: string[], code: string) => codes.filter((c) => c === code).length;

/**
 * One participant floods, with authentication required and a low limit (5 per second, bursts of
 * 20), against real NATS: the flood is refused RATE_LIMITED with a retry hint, the other
 * participants are not slowed at all, and the audit log does not grow by one entry per message.
 */
describe('security: rate limits per participant and per source', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_RATE_LIMIT_PER_SECOND: String(PER_SECOND),
    CONCLAVE_RATE_LIMIT_BURST: String(BURST),
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({ [CAROL_TOKEN]: 'carol' }),
  });
  let base = '';

  beforeAll(async () => {
    await h.start('intake', 'audit', 'escalation');
    await h.seed([
      { participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      {
        participant_id: 'carol',
        roles: ['human-resolver'],
        grants: [{ domain: 'ops', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
    ]);
    const escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    base = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(() => h.stop());

  it('given mallory floods signed requests, then hers beyond the allowance are RATE_LIMITED with a retry hint, while alice proposes and lists as much as her own allowance, untouched', async () => {
    // Mallory's client throws each refusal (no waiting them out): the test counts them.
    const mallory = await h.clientFor('mallory', undefined, { rateLimitWaitMs: 0 });
    const alice = await h.clientFor('alice');

    const flood = outcomes(Array.from({ length: 300 }, () => mallory.list({ limit: 1 })));
    const alicesWork = outcomes(
      Array.from({ length: BURST }, (_, i) =>
        i % 2 === 0
          ? alice.propose({ domain: 'risk', author: 'alice', payload: { i }, quorum: 5, created_at: now() })
          : alice.list({ limit: 1 }),
      ),
    );
    const [m, a] = await Promise.all([flood, alicesWork]);

    expect(a.codes).toEqual(Array.from({ length: BURST }, () => 'ok'));
    expect(count(m.codes, 'ok')).toBeGreaterThanOrEqual(BURST);
    expect(count(m.codes, 'RATE_LIMITED')).toBeGreaterThan(0);
    expect(count(m.codes, 'ok') + count(m.codes, 'RATE_LIMITED')).toBe(300);
    expect(m.retryHints.length).toBe(count(m.codes, 'RATE_LIMITED'));
    for (const hint of m.retryHints) expect(hint).toBeGreaterThan(0);
    expect(Math.max(...m.retryHints)).toBeLessThanOrEqual(1000 / PER_SECOND);

    // The flood is audited, by the first refusal of each run of refusals, not one entry per message.
    const refused = await eventually(
      async () => {
        // The administrator polling is itself under the limit: a refused poll is simply tried again.
        const entries = await h.auditEntries({ actor: 'mallory', outcome: 'rejected' }).catch((err: ConclaveError) => {
          if (err.code === 'RATE_LIMITED') return [];
          throw err;
        });
        const limited = entries.filter((e) => e.error?.code === 'RATE_LIMITED');
        return limited.length > 0 ? limited : undefined;
      },
      10_000,
      "mallory's flood on the audit chain",
    );
    expect(refused.length).toBeLessThan(count(m.codes, 'RATE_LIMITED'));
    expect(refused[0]).toMatchObject({ actor: 'mallory', authenticated: true });

    // Mallory's allowance comes back at its rate: after the hinted wait she is served again.
    await new Promise((r) => setTimeout(r, Math.max(...m.retryHints)));
    await eventually(
      async () =>
        await mallory.list({ limit: 1 }).then(
          () => true,
          () => undefined,
        ),
      5_000,
      'mallory served again',
    );
  });

  it("given requests claiming dana with forged signatures, then none of them spends dana's allowance: she still has her whole burst", async () => {
    await h.seed([{ participant_id: 'dana', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5 }] }]);
    const forged = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const hd = headers();
        hd.set('Conclave-Participant', 'dana');
        hd.set('Conclave-Timestamp', now());
        hd.set('Conclave-Nonce', `forged-nonce-${i}-0123456789`);
        hd.set('Conclave-Signature', Buffer.alloc(64, i).toString('base64'));
        return decode((await h.nc.request(`${h.prefix}.v1.list`, encode({ limit: 1 }), { timeout: 5_000, headers: hd })).data);
      }),
    );
    expect(new Set(forged.map((r) => r.error?.code))).toEqual(new Set(['UNAUTHENTICATED']));

    const dana: ConclaveClient = await h.clientFor('dana');
    const { codes } = await outcomes(Array.from({ length: BURST }, () => dana.list({ limit: 1 })));
    expect(codes).toEqual(Array.from({ length: BURST }, () => 'ok'));
  });

  it("given wrong human tokens over NATS naming mallory, then carol's token over NATS still works (per named participant), and wrong tokens from one HTTP address get 429 with Retry-After", async () => {
    const asking = (token: string, participant: string) => {
      const hd = headers();
      hd.set('Authorization', `Bearer ${token}`);
      hd.set('Conclave-Participant', participant);
      return h.nc
        .request(`${h.prefix}.v1.escalation.list`, encode({}), { timeout: 5_000, headers: hd })
        .then((m) => decode(m.data) as { ok: boolean; error?: { code: string; retry_after_ms?: number } });
    };
    const wrong: Array<{ ok: boolean; error?: { code: string; retry_after_ms?: number } }> = [];
    for (let i = 0; i < 12; i++) wrong.push(await asking(`wrong-token-${i}-0123456789abcdefghijklmnop`, 'mallory'));
    expect(wrong.slice(0, 10).map((r) => r.error?.code)).toEqual(Array.from({ length: 10 }, () => 'UNAUTHENTICATED'));
    expect(wrong.slice(10).map((r) => r.error?.code)).toEqual(['RATE_LIMITED', 'RATE_LIMITED']);
    expect(wrong[11].error?.retry_after_ms).toBeGreaterThan(0);
    expect(await asking(CAROL_TOKEN, 'carol')).toMatchObject({ ok: true });

    const http = (token: string) => fetch(`${base}/escalations`, { headers: { Authorization: `Bearer ${token}` } });
    for (let i = 0; i < 10; i++) expect((await http(`wrong-http-${i}-0123456789abcdefghijklmnop`)).status).toBe(401);
    const limited = await http(CAROL_TOKEN);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThan(0);
    expect((await limited.json()) as unknown).toMatchObject({
      ok: false,
      error: { code: 'RATE_LIMITED', retry_after_ms: expect.any(Number) },
    });
  });
});
