import { AUDIT_PATTERNS, AUTH_HEADERS, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ConclaveError, jwtSigner } from '@conclave/sdk';
import { loadConfig } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { AddressInfo } from 'node:net';
import { AuditConfig } from '../../apps/audit/src/app/audit.config';
import { CouncilConfig } from '../../apps/council/src/app/council.config';
import { EscalationConfig } from '../../apps/escalation/src/app/escalation.config';
import { IntakeConfig } from '../../apps/intake/src/app/intake.config';
import { ResolverConfig } from '../../apps/resolver/src/app/resolver.config';
import { SweeperConfig } from '../../apps/sweeper/src/app/sweeper.config';
import { ConclaveHarness, eventually, SecureConclaveHarness } from '../support/conclave-harness';

const CAROL_TOKEN = 'carol-ops-resolver-token-0123456789abcdef';
const RISKPUB_TOKEN = 'riskpub-resolver-token-0123456789abcdef';
const TEMP_TOKEN = 'temp-resolver-token-0123456789abcdefghij';
const GHOST_TOKEN = 'ghost-not-registered-token-0123456789abc';

/**
 * Attacks on reads, human resolution, audit attribution and reply sizes, with authentication
 * required, against real NATS and the escalation service's HTTP API. The registry: alice
 * (restricted clearance, grant on risk), mallory (public clearance, grant on ops), carol (human
 * resolver on ops), riskpub (human resolver on risk, public clearance), temp (a human resolver
 * on risk about to be deactivated); `ghost` has a token but is not registered.
 */
describe('security attacks: reads, human tokens, audit attribution, oversized replies', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({
      [CAROL_TOKEN]: 'carol',
      [RISKPUB_TOKEN]: 'riskpub',
      [TEMP_TOKEN]: 'temp',
      [GHOST_TOKEN]: 'ghost',
    }),
  });
  const now = () => new Date().toISOString();
  let base: string;
  let secretId: string;
  let plainRiskId: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'audit', 'escalation');
    await h.seed([
      { participant_id: 'alice', clearance: 'restricted', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory', clearance: 'public', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      {
        participant_id: 'carol',
        roles: ['human-resolver'],
        grants: [{ domain: 'ops', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
      {
        participant_id: 'riskpub',
        roles: ['human-resolver'],
        clearance: 'public',
        grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
      {
        participant_id: 'temp',
        roles: ['human-resolver'],
        grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
    ]);
    const alice = await h.clientFor('alice');
    secretId = (
      await alice.propose({
        domain: 'risk.credit',
        author: 'alice',
        payload: { merger: 'acme' },
        quorum: 5,
        created_at: now(),
        classification: 'restricted',
      })
    ).proposal_id;
    await alice.escalate(secretId, { reason: 'needs a human', requested_by: 'alice' });
    plainRiskId = (await alice.propose({ domain: 'risk', author: 'alice', payload: { loan: 1 }, quorum: 5, created_at: now() }))
      .proposal_id;
    const escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    base = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
    await eventually(
      async () => ((await http('GET', `/escalations/${secretId}`, RISKPUB_TOKEN)).status === 200 ? true : undefined),
      10_000,
      'the escalation in the inbox',
    );
  });
  afterAll(() => h.stop());

  async function http(
    method: string,
    path: string,
    token?: string,
    body?: unknown,
  ): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(base + path, {
      method,
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text, headers: res.headers };
  }

  /** Raw NATS request/reply with no credentials at all. */
  async function unsigned(pattern: string, body: unknown): Promise<any> {
    const m = await h.nc.request(`${h.prefix}.${pattern}`, new TextEncoder().encode(JSON.stringify(body)), { timeout: 5000 });
    return JSON.parse(new TextDecoder().decode(m.data));
  }

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as ConclaveError,
    );

  describe('1. classified payloads to anyone', () => {
    it('unauthenticated HTTP reads of escalations and the decision stream: 401 UNAUTHENTICATED, no payload', async () => {
      for (const path of [`/escalations/${secretId}`, '/escalations', '/escalations?status=all', '/console/decisions']) {
        const r = await http('GET', path);
        expect({ path, status: r.status, code: r.body?.error?.code }).toEqual({ path, status: 401, code: 'UNAUTHENTICATED' });
        expect(JSON.stringify(r.body)).not.toContain('acme');
      }
    });

    it('unauthenticated NATS escalation.get and escalation.list: UNAUTHENTICATED, no payload', async () => {
      for (const [pattern, body] of [
        ['v1.escalation.get', { proposal_id: secretId }],
        ['v1.escalation.list', { status: 'all' }],
      ] as const) {
        const reply = await unsigned(pattern, body);
        expect(reply).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
        expect(JSON.stringify(reply)).not.toContain('acme');
      }
    });

    it('a reader with a grant on the domain but not the clearance: the escalation with the payload withheld, the denial audited', async () => {
      const r = await http('GET', `/escalations/${secretId}`, RISKPUB_TOKEN);
      expect(r.status).toBe(200);
      expect(r.body.proposal).toMatchObject({ proposal_id: secretId, payload: {}, payload_withheld: true, classification: 'restricted' });
      expect(JSON.stringify(r.body)).not.toContain('acme');
      await eventually(
        async () =>
          (await h.auditEntries({ actor: 'riskpub', action: 'rejected:escalation.get' })).find((e) => e.error?.field === 'classification'),
        10_000,
        'withheld audited',
      );
    });

    it('a signed participant without a grant on the domain: escalation.get FORBIDDEN, escalation.list leaves it out', async () => {
      const mallory = await h.clientFor('mallory');
      expect(await refusal(mallory.escalation(secretId))).toMatchObject({ code: 'FORBIDDEN', field: 'domain' });
      expect((await mallory.escalations({ status: 'all' })).map((e) => e.proposal_id)).not.toContain(secretId);
      const alice = await h.clientFor('alice');
      expect((await alice.escalation(secretId)).proposal.payload).toEqual({ merger: 'acme' });
    });

    it('the console forbids framing and foreign scripts; the HTTP API listens on loopback unless told otherwise', async () => {
      const page = await fetch(`${base}/console/`);
      expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
      expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      const script = await (await fetch(`${base}/console/console.js`)).text();
      expect(script).toMatch(/sessionStorage\.setItem\('conclave\.token'/);
      expect(script).not.toMatch(/localStorage\.setItem\('conclave\.token'/);
      expect(loadConfig(EscalationConfig, {}).httpHost).toBe('127.0.0.1');
    });

    it('every service, audit export and metrics included, listens on loopback when HTTP_HOST is not set', async () => {
      for (const config of [IntakeConfig, ResolverConfig, SweeperConfig, CouncilConfig, EscalationConfig, AuditConfig]) {
        expect({ config: config.name, host: loadConfig(config, {}).httpHost }).toEqual({ config: config.name, host: '127.0.0.1' });
      }
      // Given an audit service started without HTTP_HOST, when we look at where it listens and ask it, then loopback only.
      const plain = new ConclaveHarness();
      delete plain.env['HTTP_HOST'];
      await plain.start('audit');
      try {
        const server = plain.instances[0].app.getHttpServer();
        const address = server.address() as AddressInfo;
        expect(address.address).toBe('127.0.0.1');
        const metrics = await fetch(`http://127.0.0.1:${address.port}/metrics`);
        expect(metrics.status).toBe(200);
        const exported = await fetch(`http://127.0.0.1:${address.port}/audit/export`);
        expect(exported.status).toBe(200);
      } finally {
        await plain.stop();
      }
    });
  });

  describe('3. human tokens and the registry', () => {
    it('a token of a name the registry does not know: 401, nothing resolved', async () => {
      const r = await http('POST', `/escalations/${secretId}/resolve`, GHOST_TOKEN, { outcome: 'approved', note: 'ship it' });
      expect(r).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
      const still = await (await h.clientFor('alice')).escalation(secretId);
      expect(still.escalation.status).toBe('open');
    });

    it('a resolver of ops resolving a risk escalation with a valid token: 403 FORBIDDEN, audited as carol, authenticated', async () => {
      const r = await http('POST', `/escalations/${secretId}/resolve`, CAROL_TOKEN, { outcome: 'approved', note: 'not my domain' });
      expect(r).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN', field: 'domain' } } });
      const entry = await eventually(
        async () => (await h.auditEntries({ actor: 'carol', action: 'rejected:resolve' }))[0],
        10_000,
        'refused resolution audited',
      );
      expect(entry).toMatchObject({ outcome: 'rejected', proposal_id: secretId, authenticated: true, error: { code: 'FORBIDDEN' } });
      const still = await (await h.clientFor('alice')).escalation(secretId);
      expect(still.escalation.status).toBe('open');
    });

    it("a deactivated participant's token stops working at once", async () => {
      expect((await http('GET', '/escalations', TEMP_TOKEN)).status).toBe(200);
      await h.admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: 'temp', reason: 'left the company' });
      const r = await http('POST', `/escalations/${secretId}/resolve`, TEMP_TOKEN, { outcome: 'approved', note: 'on my way out' });
      expect(r).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
    });

    it('a refused audit query is itself audited', async () => {
      const mallory = await h.clientFor('mallory');
      expect(await refusal(mallory.call(AUDIT_PATTERNS.query, {}))).toMatchObject({ code: 'FORBIDDEN' });
      await eventually(
        async () => (await h.auditEntries({ actor: 'mallory', action: 'rejected:audit.query' }))[0],
        10_000,
        'refused audit query audited',
      );
    });
  });

  describe('7. reads scoped to domain grants', () => {
    it('get of an unclassified proposal of another domain: FORBIDDEN; list leaves such proposals out, with one audit entry per list', async () => {
      const mallory = await h.clientFor('mallory');
      expect(await refusal(mallory.get(plainRiskId))).toMatchObject({ code: 'FORBIDDEN', field: 'domain' });
      const alice = await h.clientFor('alice');
      for (let i = 0; i < 5; i++) await alice.propose({ domain: 'risk', author: 'alice', payload: { n: i }, quorum: 5, created_at: now() });
      await eventually(
        async () => ((await alice.list({ domain: 'risk', limit: 500 })).proposals.length >= 6 ? true : undefined),
        10_000,
        'the index',
      );
      const before = (await h.auditEntries({ actor: 'mallory', action: 'rejected:list' })).length;
      const page = await mallory.list({ limit: 500 });
      expect(page.proposals.filter((p) => p.domain.startsWith('risk'))).toEqual([]);
      const after = await eventually(
        async () => {
          const entries = await h.auditEntries({ actor: 'mallory', action: 'rejected:list' });
          return entries.length > before ? entries : undefined;
        },
        10_000,
        'the list denial',
      );
      await new Promise((r) => setTimeout(r, 500));
      expect((await h.auditEntries({ actor: 'mallory', action: 'rejected:list' })).length).toBe(before + 1);
      expect(after[after.length - 1].error?.message).toMatch(/left out: no grant on risk/);
    });
  });

  describe('10. client-chosen response timestamps', () => {
    it('a response dated an hour ahead is SCHEMA_VIOLATION on timestamp and records nothing; one dated now is recorded with it', async () => {
      await h.seed([{ participant_id: 'bob', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5 }] }]);
      const alice = await h.clientFor('alice');
      const bob = await h.clientFor('bob');
      const p = await alice.propose({ domain: 'risk', author: 'alice', payload: { t: 1 }, quorum: 5, created_at: now() });
      const ahead = new Date(Date.now() + 3_600_000).toISOString();
      expect(await refusal(bob.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.5, timestamp: ahead }))).toMatchObject({
        code: 'SCHEMA_VIOLATION',
        field: 'timestamp',
      });
      expect((await alice.get(p.proposal_id)).responses).toEqual([]);
      const present = now();
      const recorded = await bob.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.5, timestamp: present });
      expect(recorded.responses).toEqual([expect.objectContaining({ participant_id: 'bob', timestamp: present })]);
    });
  });

  describe('8. audit attribution', () => {
    it('a forged request claiming alice is audited as claimed, not authenticated; a refused JWT request as authenticated', async () => {
      const forger = await ConclaveClient.connect({
        nc: h.nc,
        prefix: h.prefix,
        sign: () => ({
          [AUTH_HEADERS.participant]: 'alice',
          [AUTH_HEADERS.timestamp]: now(),
          [AUTH_HEADERS.nonce]: ulid(),
          [AUTH_HEADERS.signature]: Buffer.alloc(64, 1).toString('base64'),
        }),
      });
      await refusal(forger.get(plainRiskId));
      const forged = await eventually(
        async () =>
          (await h.auditEntries({ actor: 'alice', action: 'rejected:get' })).find(
            (e) => e.proposal_id === plainRiskId && e.error?.code === 'UNAUTHENTICATED',
          ),
        10_000,
        'forged audited',
      );
      expect(forged.authenticated).toBe(false);

      const viaJwt = await ConclaveClient.connect({
        nc: h.nc,
        prefix: h.prefix,
        signer: jwtSigner('mallory', h.keys.get('mallory')!.privateKeyPem),
      });
      expect(await refusal(viaJwt.get(plainRiskId))).toMatchObject({ code: 'FORBIDDEN' });
      const jwtEntry = await eventually(
        async () => (await h.auditEntries({ actor: 'mallory', action: 'rejected:get' })).find((e) => e.proposal_id === plainRiskId),
        10_000,
        'jwt refusal audited',
      );
      expect(jwtEntry.authenticated).toBe(true);
    });
  });

  describe('2. one request kills a service', () => {
    it('intake: list over proposals whose payloads exceed max_payload together pages by bytes, and intake keeps answering', async () => {
      const alice = await h.clientFor('alice');
      const big = 'x'.repeat(60_000);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++)
        ids.push(
          (await alice.propose({ domain: 'risk.bulk', author: 'alice', payload: { big, i }, quorum: 5, created_at: now() })).proposal_id,
        );
      await eventually(async () => ((await alice.get(ids[19])).proposal_id === ids[19] ? true : undefined));
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await alice.list({ domain: 'risk.bulk', limit: 500, ...(cursor ? { cursor } : {}) });
        seen.push(...page.proposals.map((p) => p.proposal_id));
        cursor = page.next_cursor ?? undefined;
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBeGreaterThan(1);
      expect(seen.sort()).toEqual([...ids].sort());
      expect((await alice.get(plainRiskId)).proposal_id).toBe(plainRiskId);
    }, 60_000);

    it('audit: unsigned requests with a 60 KB proposal_id do not poison the chain; audit.query still answers', async () => {
      const huge = 'A'.repeat(60_000);
      for (let i = 0; i < 20; i++)
        expect(await unsigned('v1.get', { proposal_id: huge })).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
      await new Promise((r) => setTimeout(r, 1000));
      const entries = await h.auditEntries({});
      expect(entries.length).toBeGreaterThan(20);
      expect(entries.every((e) => (e.proposal_id?.length ?? 0) <= 128)).toBe(true);
    }, 60_000);

    it('escalation: an unbounded note is refused (SCHEMA_VIOLATION on note), and escalation.list still answers', async () => {
      const r = await http('POST', `/escalations/${secretId}/resolve`, RISKPUB_TOKEN, { outcome: 'approved', note: 'n'.repeat(10_000) });
      expect(r).toMatchObject({ status: 400, body: { error: { code: 'SCHEMA_VIOLATION', field: 'note' } } });
      const alice = await h.clientFor('alice');
      expect((await alice.escalations({ status: 'all' })).map((e) => e.proposal_id)).toContain(secretId);
    });
  });
});
