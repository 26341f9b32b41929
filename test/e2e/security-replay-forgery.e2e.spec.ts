import { AUDIT_PATTERNS, AuditEntry } from '@conclave/registry-protocol';
import { ed25519Signer } from '@conclave/sdk';
import { headers as natsHeaders, nanos, StorageType } from 'nats';
import { connect } from 'nats';
import { createHash } from 'node:crypto';
import { eventually, NATS_URL, SecureConclaveHarness } from '../support/conclave-harness';

const SKEW_MS = 5_000;

/**
 * Replays after the nonce expired (a nonce bucket left with a shorter TTL than the accepted
 * window, as a changed skew setting used to leave it), the escalation service's skew setting,
 * and forged or malformed messages on the audit log's rejections feed.
 */
describe('security attacks: replay after nonce expiry, forged rejection records', () => {
  const h = new SecureConclaveHarness({ CONCLAVE_AUTH_SKEW_MS: String(SKEW_MS) });
  const now = () => new Date().toISOString();

  beforeAll(async () => {
    // The bucket as an earlier deployment with a 1 s skew left it: nonces kept 2 s.
    const nc = await connect({ servers: NATS_URL });
    await nc.jetstream().views.kv(`${h.env['CONCLAVE_EVENT_STREAM']}_NONCES`, { history: 1, ttl: 2_000, storage: StorageType.File });
    await nc.close();
    await h.start('intake', 'resolver', 'audit', 'escalation');
    await h.seed([{ participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] }]);
  });
  afterAll(() => h.stop());

  const request = async (subject: string, body: Uint8Array, hdrs: ReturnType<typeof natsHeaders>) =>
    JSON.parse(new TextDecoder().decode((await h.nc.request(subject, body, { headers: hdrs, timeout: 5000 })).data));

  it('6. the nonce bucket is raised to the whole accepted window at start', async () => {
    const info = await (await h.nc.jetstreamManager()).streams.info(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_NONCES`);
    // 3 x skew + 1 s (nonceTtlMs): the signed window and a JWT's iat, rounded to whole seconds.
    expect(info.config.max_age).toBe(nanos(3 * SKEW_MS + 1_000));
  });

  it('6. a captured propose replayed after the old nonce TTL, still inside the timestamp window: UNAUTHENTICATED, one proposal only', async () => {
    const subject = `${h.prefix}.v1.propose`;
    const body = new TextEncoder().encode(
      JSON.stringify({
        schema_version: '1.0',
        type: 'proposal',
        domain: 'risk',
        author: 'alice',
        payload: { x: 1 },
        quorum: 3,
        created_at: now(),
        expires_at: null,
      }),
    );
    const hdrs = natsHeaders();
    for (const [k, v] of Object.entries(ed25519Signer('alice', h.keys.get('alice')!.privateKeyPem)(subject, body))) hdrs.set(k, v);
    expect(await request(subject, body, hdrs)).toMatchObject({ ok: true });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await request(subject, body, hdrs)).toMatchObject({
      ok: false,
      error: { code: 'UNAUTHENTICATED', message: expect.stringMatching(/replayed/) },
    });
    const alice = await h.clientFor('alice');
    await new Promise((r) => setTimeout(r, 300));
    expect((await alice.list({ domain: 'risk' })).proposals).toHaveLength(1);
  }, 20_000);

  it('6. the escalation service honours CONCLAVE_AUTH_SKEW_MS: a request 10 s old is stale there too', async () => {
    const subject = `${h.prefix}.v1.escalation.list`;
    const body = new TextEncoder().encode('{}');
    const late = ed25519Signer('alice', h.keys.get('alice')!.privateKeyPem, { now: () => new Date(Date.now() - 10_000) });
    const hdrs = natsHeaders();
    for (const [k, v] of Object.entries(late(subject, body))) hdrs.set(k, v);
    expect(await request(subject, body, hdrs)).toMatchObject({
      ok: false,
      error: { code: 'UNAUTHENTICATED', message: expect.stringMatching(/stale/) },
    });
  });

  async function entries(filter: Record<string, unknown>): Promise<AuditEntry[]> {
    return (await h.admin.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, { ...filter, limit: 1000 })).entries;
  }

  it('5. a forged "recorded" event and a non-JSON message on the rejections subject: both enter as rejected, the feed keeps going', async () => {
    const subject = `${h.env['CONCLAVE_EVENT_SUBJECT_PREFIX']}.audit.rejections`;
    const js = h.nc.jetstream();
    const forged = {
      event_id: 'forged-1',
      type: 'ProposalSubmitted',
      actor: 'mallory',
      occurred_at: now(),
      data: { proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', payload_hash: 'f'.repeat(64) },
    };
    const forgedBytes = new TextEncoder().encode(JSON.stringify(forged));
    const garbageBytes = new TextEncoder().encode('this is not json');
    await js.publish(subject, forgedBytes, { msgID: 'forged-1' });
    await js.publish(subject, garbageBytes, { msgID: 'garbage-1' });
    const malformed = await eventually(
      async () => {
        const found = await entries({ action: 'rejected:malformed-record' });
        return found.length >= 2 ? found : undefined;
      },
      10_000,
      'malformed records on the chain',
    );
    expect(malformed.map((e) => e.outcome)).toEqual(['rejected', 'rejected']);
    expect(malformed[0].error?.message).toMatch(/type is not CommandRejected/);
    expect(malformed[1].error?.message).toMatch(/not UTF-8 JSON/);
    // Each entry holds the hash of the bytes it was made of.
    const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
    expect(malformed.map((e) => e.payload_hash)).toEqual([sha256(forgedBytes), sha256(garbageBytes)]);
    expect((await entries({ actor: 'mallory' })).filter((e) => e.outcome === 'recorded')).toEqual([]);
    // the feed still records real refusals after the garbage
    const unsigned = await h.nc.request(`${h.prefix}.v1.get`, new TextEncoder().encode('{"proposal_id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}'), {
      timeout: 5000,
    });
    expect(JSON.parse(new TextDecoder().decode(unsigned.data))).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
    await eventually(
      async () => (await entries({ action: 'rejected:get' })).find((e) => e.authenticated === false),
      10_000,
      'a later refusal recorded',
    );
  });
});
