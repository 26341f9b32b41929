import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ConclaveError, generateParticipantKeys, jwtSigner } from '@conclave/sdk';
import { headers as natsHeaders } from 'nats';
import { SecureConclaveHarness } from '../support/conclave-harness';

/** RFC 14.1, the JWT alternative: a bearer EdDSA JWT bound to subject and body, used once. */
describe('security: JWT authentication over NATS', () => {
  const h = new SecureConclaveHarness();
  const now = () => new Date().toISOString();
  let dana: ConclaveClient;

  beforeAll(async () => {
    await h.start('intake');
    await h.seed([{ participant_id: 'dana', grants: [{ domain: 'risk', domain_authority: 0.8, trust_score: 0.9 }] }]);
    dana = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      streamSuffix: h.run,
      signer: jwtSigner('dana', h.keys.get('dana')!.privateKeyPem),
    });
  });
  afterAll(() => h.stop());

  const propose = (client: ConclaveClient) =>
    client.propose({ domain: 'risk.credit', author: 'dana', payload: { loan: 7 }, quorum: 2, created_at: now() });

  async function rawRequest(subject: string, body: unknown, headers: Record<string, string>) {
    const h2 = natsHeaders();
    for (const [k, v] of Object.entries(headers)) h2.set(k, v);
    const msg = await h.nc.request(subject, new TextEncoder().encode(JSON.stringify(body)), { timeout: 5000, headers: h2 });
    return JSON.parse(new TextDecoder().decode(msg.data)) as { ok: boolean; error?: { code: string; message: string } };
  }

  it("given a JWT signed by the participant's registered key, then the command is accepted as that participant", async () => {
    const p = await propose(dana);
    expect(p).toMatchObject({ author: 'dana', status: 'pending' });
  });

  it('given a JWT signed by another key, then UNAUTHENTICATED', async () => {
    const forger = await ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      streamSuffix: h.run,
      signer: jwtSigner('dana', generateParticipantKeys().privateKeyPem),
    });
    await expect(propose(forger)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('given the same JWT twice, or on another body, then UNAUTHENTICATED', async () => {
    const subject = `${h.prefix}.v1.propose`;
    const body = {
      schema_version: '1.0',
      type: 'proposal',
      domain: 'risk.credit',
      author: 'dana',
      payload: { n: 1 },
      quorum: 2,
      created_at: now(),
      expires_at: null,
    };
    const headers = await jwtSigner('dana', h.keys.get('dana')!.privateKeyPem)(subject, new TextEncoder().encode(JSON.stringify(body)));
    expect((await rawRequest(subject, body, headers)).ok).toBe(true);
    expect((await rawRequest(subject, body, headers)).error?.code).toBe('UNAUTHENTICATED');
    const fresh = await jwtSigner('dana', h.keys.get('dana')!.privateKeyPem)(subject, new TextEncoder().encode(JSON.stringify(body)));
    const tampered = await rawRequest(subject, { ...body, payload: { n: 2 } }, fresh);
    expect(tampered.error?.code).toBe('UNAUTHENTICATED');
    expect(tampered.error?.message).toMatch(/body/);
  });

  it('given a JWT for a revoked key, then UNAUTHENTICATED', async () => {
    const rotated = generateParticipantKeys();
    await h.admin.call(REGISTRY_PATTERNS.rotateKey, { participant_id: 'dana', public_key: rotated.publicKey });
    const err = await propose(dana).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConclaveError);
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});
