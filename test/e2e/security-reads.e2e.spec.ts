import { acpStreamNames } from '@conclave/messaging';
import { AUDIT_PATTERNS, AUTH_HEADERS, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { CouncilClient, ed25519Signer, jwtSigner } from '@conclave/sdk';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { headers as natsHeaders } from 'nats';
import { ulid } from 'ulid';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

const SECRET = 'merger-with-acme-SECRET';
const PLAIN = 'plain-risk-loan-PLAIN';
const MALLORY_TOKEN = 'mallory-ops-token-0123456789abcdefghijkl';
const RISKPUB_TOKEN = 'riskpub-public-token-0123456789abcdefghij';
const WATCHER_TOKEN = 'watcher-risk-token-0123456789abcdefghijkl';
const LEAVER_TOKEN = 'leaver-risk-token-0123456789abcdefghijklm';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Reply {
  ok: boolean;
  error?: { code: string; field?: string; message?: string };
  [key: string]: unknown;
}

/**
 * Every READ path attacked with CONCLAVE_AUTH_MODE=required: intake's get/list/lineage, the
 * registry and policy reads, the audit queries, the escalation service's NATS and HTTP reads and
 * its console stream, and the Council's run and read-model queries. For each: no credentials,
 * a registered participant without the grant/role/clearance, a captured signed request replayed
 * (or re-aimed at another subject), and another participant's private data. Each refusal is
 * asserted with its code, and the reply is checked to disclose nothing (no payload, no mapping).
 * Paths already attacked elsewhere (security.e2e, security-attacks.e2e, council-security.e2e,
 * escalation-http.e2e, mcp-secure.e2e) are not repeated here.
 *
 * Registry: alice (confidential, grant on risk), bob (grant on risk), mallory (restricted
 * clearance but a grant on ops only, token), opsbot (grant on ops), riskpub (public clearance,
 * grant on risk, token), watcher and leaver (grant on risk, tokens), auditor (the council run's
 * observer), and the council panel.
 */
describe('security: every read path refuses what it must (authentication required, over NATS and HTTP)', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({
      [MALLORY_TOKEN]: 'mallory',
      [RISKPUB_TOKEN]: 'riskpub',
      [WATCHER_TOKEN]: 'watcher',
      [LEAVER_TOKEN]: 'leaver',
    }),
  });
  const councilPrefix = `c${h.prefix}`;
  const acp = (pattern: string) => `${h.prefix}.${pattern}`;
  const council = (pattern: string) => `${councilPrefix}.${pattern}`;
  const now = () => new Date().toISOString();
  const pem = (id: string) => h.keys.get(id)!.privateKeyPem;

  let base: string;
  let secretId: string;
  let plainId: string;
  let opsEffectId: string;

  const proposers = ['cr-builder', 'cr-skeptic', 'cr-operator'];
  const chair = 'cr-chair';
  const members: ScriptedMember[] = [];
  let decisions: CouncilDecisionCollector;
  let runId: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation', 'audit', 'council');
    await h.seed([
      {
        participant_id: 'alice',
        clearance: 'confidential',
        grants: [
          { domain: 'risk', domain_authority: 0.9, trust_score: 0.9 },
          { domain: 'general', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      { participant_id: 'bob', clearance: 'confidential', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory', clearance: 'restricted', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'opsbot', grants: [{ domain: 'ops', domain_authority: 0.9, trust_score: 0.9 }] },
      {
        participant_id: 'riskpub',
        roles: ['human-resolver'],
        clearance: 'public',
        grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1 }],
      },
      { participant_id: 'watcher', clearance: 'confidential', grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1 }] },
      { participant_id: 'leaver', clearance: 'confidential', grants: [{ domain: 'risk', domain_authority: 1, trust_score: 1 }] },
      { participant_id: 'auditor' },
      ...[...proposers, chair].map((participant_id) => ({ participant_id })),
    ]);
    const alice = await h.clientFor('alice');
    secretId = (
      await alice.propose({
        domain: 'risk.credit',
        author: 'alice',
        payload: { deal: SECRET },
        quorum: 5,
        created_at: now(),
        classification: 'confidential',
      })
    ).proposal_id;
    await alice.escalate(secretId, { reason: 'needs a human', requested_by: 'alice' });
    plainId = (await alice.propose({ domain: 'risk', author: 'alice', payload: { loan: PLAIN }, quorum: 5, created_at: now() }))
      .proposal_id;
    const mallory = await h.clientFor('mallory');
    opsEffectId = (
      await mallory.propose({ domain: 'ops', author: 'mallory', payload: { fix: 1 }, quorum: 5, created_at: now(), caused_by: [plainId] })
    ).proposal_id;
    const escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    base = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
    await eventually(
      async () => ((await alice.escalations()).some((e) => e.proposal_id === secretId) ? true : undefined),
      10_000,
      'the escalation in the inbox',
    );
  });

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  /** A raw NATS request with exactly these headers (none: an anonymous caller). */
  async function raw(
    subject: string,
    body: unknown,
    hdrs?: Record<string, string>,
    bytes?: Uint8Array,
  ): Promise<{ reply: Reply; text: string }> {
    const data = bytes ?? encoder.encode(JSON.stringify(body));
    let headers;
    if (hdrs) {
      headers = natsHeaders();
      for (const [k, v] of Object.entries(hdrs)) headers.set(k, v);
    }
    const m = await h.nc.request(subject, data, { timeout: 10_000, ...(headers ? { headers } : {}) });
    const text = decoder.decode(m.data);
    return { reply: JSON.parse(text) as Reply, text };
  }

  /** A request signed by `id` (Ed25519 headers), kept as captured on the wire for a replay. */
  async function signed(id: string, subject: string, body: unknown) {
    const bytes = encoder.encode(JSON.stringify(body));
    const hdrs = ed25519Signer(id, pem(id))(subject, bytes);
    return { hdrs, bytes, send: (to = subject) => raw(to, undefined, hdrs, bytes) };
  }

  /** Refused with `code`, and nothing of `secrets` anywhere in the reply. */
  function expectRefused(r: { reply: Reply; text: string }, code: string, secrets: string[] = [SECRET, PLAIN], field?: string) {
    expect(r.reply).toMatchObject({ ok: false, error: field ? { code, field } : { code } });
    for (const s of secrets) expect(r.text).not.toContain(s);
  }

  async function http(path: string, token?: string, extra: Record<string, string> = {}) {
    const res = await fetch(base + path, { headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...extra } });
    const text = await res.text();
    return { status: res.status, text, body: text.startsWith('{') ? (JSON.parse(text) as Record<string, any>) : undefined };
  }

  /** The console's decision stream (SSE) as `token` reads it: every `decision` event so far. */
  async function consoleStream(token: string) {
    const abort = new AbortController();
    const res = await fetch(`${base}/console/decisions`, { headers: { Authorization: `Bearer ${token}` }, signal: abort.signal });
    const events: Array<Record<string, any>> = [];
    const reader = res.body!.getReader();
    void (async () => {
      let buffer = '';
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true });
        for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
          const data = buffer
            .slice(0, i)
            .split('\n')
            .find((l) => l.startsWith('data: '));
          buffer = buffer.slice(i + 2);
          if (data) events.push(JSON.parse(data.slice('data: '.length)) as Record<string, any>);
        }
      }
    })();
    return {
      status: res.status,
      events,
      has: (id: string) => events.some((e) => e['proposal_id'] === id),
      close: () => abort.abort(),
    };
  }

  /** A proposal of `domain` decided at once (quorum 1, one endorsement): a decision event on the stream. */
  async function decided(author: string, voter: string, domain: string, payload: Record<string, unknown>, classification?: string) {
    const p = await (
      await h.clientFor(author)
    ).propose({ domain, author, payload, quorum: 1, created_at: now(), ...(classification ? { classification } : {}) });
    await (await h.clientFor(voter)).endorse(p.proposal_id, { participant_id: voter, confidence: 0.9 });
    return p.proposal_id;
  }

  describe('intake: acp.v1.get, acp.v1.list, acp.v1.lineage', () => {
    it('given no credentials, or only headers claiming alice without a valid signature, when get, list and lineage are asked, then UNAUTHENTICATED and no proposal in the reply', async () => {
      const claims: Array<Record<string, string> | undefined> = [
        undefined,
        { [AUTH_HEADERS.participant]: 'alice' },
        {
          [AUTH_HEADERS.participant]: 'alice',
          [AUTH_HEADERS.timestamp]: now(),
          [AUTH_HEADERS.nonce]: ulid(),
          [AUTH_HEADERS.signature]: Buffer.alloc(64, 1).toString('base64'),
        },
        { Authorization: `Bearer ${RISKPUB_TOKEN}` },
      ];
      for (const hdrs of claims)
        for (const [pattern, body] of [
          ['v1.get', { proposal_id: secretId }],
          ['v1.list', { limit: 500 }],
          ['v1.lineage', { proposal_id: plainId }],
        ] as const) {
          const r = await raw(acp(pattern), body, hdrs);
          expectRefused(r, 'UNAUTHENTICATED');
          expect(r.reply['proposal'] ?? r.reply['proposals'] ?? r.reply['lineage']).toBeUndefined();
        }
    });

    it('given mallory (restricted clearance, but no grant on risk), when she asks the lineage of a risk entry, then FORBIDDEN on domain; the lineage of her own ops entry leaves its risk cause out and only counts it', async () => {
      const mallory = await h.clientFor('mallory');
      expectRefused(
        await signed('mallory', acp('v1.lineage'), { proposal_id: plainId }).then((s) => s.send()),
        'FORBIDDEN',
        undefined,
        'domain',
      );
      expectRefused(
        await signed('mallory', acp('v1.lineage'), { proposal_id: secretId }).then((s) => s.send()),
        'FORBIDDEN',
        undefined,
        'domain',
      );
      const own = await mallory.lineage(opsEffectId);
      expect(own.entry.proposal_id).toBe(opsEffectId);
      expect(own.causes).toEqual([]);
      expect(own.omitted).toBe(1);
      // Only her own entry (whose caused_by she wrote herself): no node, author or status of the risk entry.
      expect([...own.causes, ...own.effects, own.entry].map((n) => n.domain)).toEqual(['ops']);
      expect(JSON.stringify(own)).not.toContain(PLAIN);
      // alice, who holds the grant, sees the cause (the entry is there to be hidden).
      expect((await (await h.clientFor('alice')).lineage(plainId)).entry.proposal_id).toBe(plainId);
    });

    it("given alice's signed list and lineage captured on the wire, when replayed as they are, then UNAUTHENTICATED (replayed nonce) and nothing disclosed", async () => {
      for (const [pattern, body] of [
        ['v1.list', { domain: 'risk', limit: 500 }],
        ['v1.lineage', { proposal_id: plainId }],
      ] as const) {
        const captured = await signed('alice', acp(pattern), body);
        const first = await captured.send();
        expect(first.reply.ok).toBe(true);
        const replay = await captured.send();
        expectRefused(replay, 'UNAUTHENTICATED');
        expect(replay.reply.error?.message).toMatch(/replayed/);
        expect(replay.text).not.toContain(plainId);
      }
    });

    it("given alice's signed (or JWT) get of the secret, when the captured request is aimed at another read subject (list, lineage, escalation.get, audit.query, participants.list, council.get), then UNAUTHENTICATED: the signature covers the subject, and the failed tries do not spend her nonce", async () => {
      const captured = await signed('alice', acp('v1.get'), { proposal_id: secretId });
      const jwtHeaders = await jwtSigner('alice', pem('alice'))(acp('v1.get'), captured.bytes);
      const elsewhere = [
        acp('v1.list'),
        acp('v1.lineage'),
        acp('v1.escalation.get'),
        acp(AUDIT_PATTERNS.query),
        acp(REGISTRY_PATTERNS.list),
        council('v1.get'),
      ];
      for (const subject of elsewhere) {
        const r = await captured.send(subject);
        expectRefused(r, 'UNAUTHENTICATED');
        expect(r.reply.error?.message).toMatch(/does not verify/);
        expectRefused(await raw(subject, undefined, jwtHeaders, captured.bytes), 'UNAUTHENTICATED');
      }
      // The capture itself was valid, and none of the tries above spent its nonce.
      const original = await captured.send();
      expect(original.reply).toMatchObject({ ok: true, proposal: { proposal_id: secretId, payload: { deal: SECRET } } });
    });
  });

  describe('registry and policies: acp.v1.participants.get / list, acp.v1.policies.get', () => {
    it('given no credentials, when the registry or a domain policy is read, then UNAUTHENTICATED and no participant, key or policy in the reply', async () => {
      for (const [pattern, body] of [
        [REGISTRY_PATTERNS.get, { participant_id: 'alice' }],
        [REGISTRY_PATTERNS.list, {}],
        ['v1.policies.get', { domain: 'risk' }],
      ] as const) {
        const r = await raw(acp(pattern), body);
        expectRefused(r, 'UNAUTHENTICATED', [h.keys.get('alice')!.publicKey]);
        expect(r.reply['participant'] ?? r.reply['participants'] ?? r.reply['policy']).toBeUndefined();
      }
    });

    it("given mallory (an agent), when she reads alice's record, the record of a participant that does not exist, or the list, then FORBIDDEN each (the same answer for an unknown name: no enumeration), no key or grant disclosed; her own record she reads", async () => {
      const alicePublicKey = h.keys.get('alice')!.publicKey;
      for (const body of [{ participant_id: 'alice' }, { participant_id: 'nobody-at-all' }]) {
        const r = await (await signed('mallory', acp(REGISTRY_PATTERNS.get), body)).send();
        expectRefused(r, 'FORBIDDEN', [alicePublicKey, '"grants"']);
      }
      const list = await (await signed('mallory', acp(REGISTRY_PATTERNS.list), {})).send();
      expectRefused(list, 'FORBIDDEN', [alicePublicKey, 'riskpub']);
      const own = await (await signed('mallory', acp(REGISTRY_PATTERNS.get), { participant_id: 'mallory' })).send();
      expect(own.reply).toMatchObject({ ok: true, participant: { participant_id: 'mallory' } });
      expect(own.text).not.toContain(alicePublicKey);
    });

    it("given the administrator's signed participants.list and a signed policies.get captured on the wire, when replayed, then UNAUTHENTICATED and no participant or policy in the reply", async () => {
      const registry = await signed('admin', acp(REGISTRY_PATTERNS.list), {});
      expect((await registry.send()).reply.ok).toBe(true);
      const replayed = await registry.send();
      expectRefused(replayed, 'UNAUTHENTICATED', [h.keys.get('alice')!.publicKey, 'riskpub']);
      expect(replayed.reply['participants']).toBeUndefined();
      const policy = await signed('alice', acp('v1.policies.get'), { domain: 'risk' });
      expect((await policy.send()).reply.ok).toBe(true);
      const again = await policy.send();
      expectRefused(again, 'UNAUTHENTICATED');
      expect(again.reply['policy']).toBeUndefined();
    });
  });

  describe('audit over NATS: acp.v1.audit.query, acp.v1.audit.head', () => {
    it('given no credentials, when the chain or its head is asked, then UNAUTHENTICATED and no entry or head in the reply', async () => {
      for (const pattern of [AUDIT_PATTERNS.query, AUDIT_PATTERNS.head]) {
        const r = await raw(acp(pattern), { limit: 1000 });
        expectRefused(r, 'UNAUTHENTICATED');
        expect(r.reply['entries'] ?? r.reply['head']).toBeUndefined();
        expect(r.text).not.toMatch(/[0-9a-f]{64}/);
      }
    });

    it('given mallory (an agent with restricted clearance, not an administrator), when she asks the head, then FORBIDDEN and no hash', async () => {
      const r = await (await signed('mallory', acp(AUDIT_PATTERNS.head), {})).send();
      expectRefused(r, 'FORBIDDEN');
      expect(r.reply['head']).toBeUndefined();
      expect(r.text).not.toMatch(/[0-9a-f]{64}/);
    });

    it("given the administrator's signed audit.query and audit.head captured on the wire, when replayed, then UNAUTHENTICATED and no entry or head", async () => {
      for (const pattern of [AUDIT_PATTERNS.query, AUDIT_PATTERNS.head]) {
        const captured = await signed('admin', acp(pattern), { limit: 1000 });
        expect((await captured.send()).reply.ok).toBe(true);
        const replay = await captured.send();
        expectRefused(replay, 'UNAUTHENTICATED', [secretId]);
        expect(replay.reply['entries'] ?? replay.reply['head']).toBeUndefined();
      }
    });
  });

  describe('escalation service over NATS: acp.v1.escalation.get / list', () => {
    it("given alice's signed escalation.get and escalation.list captured on the wire, when replayed, then UNAUTHENTICATED and no payload or escalation", async () => {
      for (const [pattern, body] of [
        ['v1.escalation.get', { proposal_id: secretId }],
        ['v1.escalation.list', { status: 'all' }],
      ] as const) {
        const captured = await signed('alice', acp(pattern), body);
        const first = await captured.send();
        expect(first.reply.ok).toBe(true);
        expect(first.text).toContain(secretId);
        const replay = await captured.send();
        expectRefused(replay, 'UNAUTHENTICATED', [SECRET, secretId]);
        expect(replay.reply.error?.message).toMatch(/replayed/);
      }
    });

    it('given riskpub signing over NATS (a grant on risk, public clearance), when she reads the confidential escalation, then its payload is withheld; the list carries no payload', async () => {
      const r = await (await signed('riskpub', acp('v1.escalation.get'), { proposal_id: secretId })).send();
      expect(r.reply).toMatchObject({ ok: true, proposal: { proposal_id: secretId, payload: {}, payload_withheld: true } });
      expect(r.text).not.toContain(SECRET);
      const list = await (await signed('riskpub', acp('v1.escalation.list'), { status: 'all' })).send();
      expect(list.reply.ok).toBe(true);
      expect(list.text).toContain(secretId);
      expect(list.text).not.toContain(SECRET);
    });

    it("given bearer tokens over NATS: mallory's own (no grant on risk) is FORBIDDEN on get and the list leaves the escalation out; riskpub's token presented in alice's name, or a token nobody issued, is UNAUTHENTICATED", async () => {
      const asMallory = { Authorization: `Bearer ${MALLORY_TOKEN}` };
      expectRefused(await raw(acp('v1.escalation.get'), { proposal_id: secretId }, asMallory), 'FORBIDDEN', [SECRET], 'domain');
      const list = await raw(acp('v1.escalation.list'), { status: 'all' }, asMallory);
      expect(list.reply.ok).toBe(true);
      expect(list.text).not.toContain(secretId);
      const stolenInAlicesName = { Authorization: `Bearer ${RISKPUB_TOKEN}`, [AUTH_HEADERS.participant]: 'alice' };
      const unknown = { Authorization: 'Bearer not-issued-token-0123456789abcdefghijk' };
      for (const hdrs of [stolenInAlicesName, unknown]) {
        expectRefused(await raw(acp('v1.escalation.get'), { proposal_id: secretId }, hdrs), 'UNAUTHENTICATED', [SECRET, '"proposal"']);
        expectRefused(await raw(acp('v1.escalation.list'), { status: 'all' }, hdrs), 'UNAUTHENTICATED', [secretId]);
      }
    });
  });

  describe('escalation service over HTTP: GET /escalations, /escalations/:id, /console/decisions, public routes', () => {
    it("given mallory's token (a grant on ops only, restricted clearance), when she GETs the risk escalation, then 403 FORBIDDEN on domain; the list leaves it out; nothing of the payload", async () => {
      const one = await http(`/escalations/${secretId}`, MALLORY_TOKEN);
      expect({ status: one.status, error: one.body?.['error'] }).toMatchObject({
        status: 403,
        error: { code: 'FORBIDDEN', field: 'domain' },
      });
      expect(one.text).not.toContain(SECRET);
      const all = await http('/escalations?status=all', MALLORY_TOKEN);
      expect(all.status).toBe(200);
      expect(all.text).not.toContain(secretId);
    });

    it("given alice's valid Ed25519 headers (or her JWT) on HTTP instead of a token, or a JWT-shaped bearer, then 401 UNAUTHENTICATED: HTTP takes registered tokens only", async () => {
      const nats = ed25519Signer('alice', pem('alice'))(acp('v1.escalation.get'), encoder.encode('{}'));
      const jwt = await jwtSigner('alice', pem('alice'))(`http:GET /escalations/${secretId}`, new Uint8Array());
      for (const path of [`/escalations/${secretId}`, '/escalations?status=all', '/console/decisions']) {
        for (const [token, extra] of [
          [undefined, nats],
          [jwt['Authorization'].slice('Bearer '.length), {}],
        ] as const) {
          const r = await http(path, token, extra);
          expect({ path, status: r.status, code: r.body?.['error']?.code }).toEqual({ path, status: 401, code: 'UNAUTHENTICATED' });
          expect(r.text).not.toContain(SECRET);
        }
      }
    });

    it("given the console's decision stream, when mallory (ops) and riskpub (risk, public clearance) open it, then mallory gets her ops decision but no risk decision, and riskpub gets the confidential risk decision with its summary withheld", async () => {
      const riskDecision = await decided('alice', 'bob', 'risk.credit', { deal: SECRET }, 'confidential');
      const opsDecision = await decided('opsbot', 'mallory', 'ops', { restart: 'ops-visible' });
      const mallory = await consoleStream(MALLORY_TOKEN);
      const riskpub = await consoleStream(RISKPUB_TOKEN);
      try {
        expect([mallory.status, riskpub.status]).toEqual([200, 200]);
        // Recent decisions come first, oldest first: the ops decision follows the risk one.
        await eventually(async () => (mallory.has(opsDecision) ? true : undefined), 10_000, "mallory's ops decision");
        await eventually(async () => (riskpub.has(riskDecision) ? true : undefined), 10_000, "riskpub's risk decision");
        expect(mallory.has(riskDecision)).toBe(false);
        expect(mallory.events.every((e) => String(e['domain']).startsWith('ops'))).toBe(true);
        expect(JSON.stringify(mallory.events)).not.toContain(SECRET);
        expect(riskpub.events.find((e) => e['proposal_id'] === riskDecision)).toMatchObject({
          payload_summary: '',
          payload_withheld: true,
        });
        expect(JSON.stringify(riskpub.events)).not.toContain(SECRET);
        expect(riskpub.has(opsDecision)).toBe(false);
      } finally {
        mallory.close();
        riskpub.close();
      }
    });

    it('public by design (docs/security.md): /openapi.json, /console/, its script, /healthz, /readyz and /metrics answer without credentials and carry no proposal id or payload', async () => {
      for (const path of ['/openapi.json', '/console/', '/console/console.js', '/healthz', '/readyz', '/metrics']) {
        const r = await http(path);
        expect({ path, status: r.status }).toEqual({ path, status: 200 });
        for (const s of [SECRET, PLAIN, secretId, plainId]) expect(r.text).not.toContain(s);
      }
    });
  });

  describe('council service: council.v1.get and the read models', () => {
    beforeAll(async () => {
      decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
      for (const id of [...proposers, chair])
        members.push(new ScriptedMember(h.nc, id, cleanBehaviour(), councilPrefix, ed25519Signer(id, pem(id))).start());
      const alice = new CouncilClient(h.nc, councilPrefix, { signer: ed25519Signer('alice', pem('alice')) });
      runId = await alice.start({
        goal_contract: scriptedGoalContract({ decision_owner: 'alice' }),
        panel: scriptedPanel({ proposers, chair }),
        policy: { stage_timeout_ms: 10_000, observers: ['auditor'] },
      });
      await decisions.waitFor(runId);
    }, 40_000);

    it('given no credentials, when the capability estimates, calibration or concentration audit are asked, then UNAUTHENTICATED and no read model; the member schemas stay public (no run data)', async () => {
      for (const [pattern, body] of [
        ['v1.capability.estimates', { rebuild: true }],
        ['v1.capability.calibration', {}],
        ['v1.capability.concentration', { period: 'month' }],
        ['v1.get', { run_id: runId }],
      ] as const) {
        const r = await raw(council(pattern), body);
        expectRefused(r, 'UNAUTHENTICATED', [...proposers, chair]);
        expect(r.reply['estimates'] ?? r.reply['calibration'] ?? r.reply['audit'] ?? r.reply['run_record']).toBeUndefined();
      }
      const schemas = await raw(council('v1.schemas'), {});
      expect(schemas.reply.ok).toBe(true);
      expect(schemas.text).not.toContain(runId);
    });

    it("given mallory, no administrator, when she asks for the estimates rebuilt from the whole log, then FORBIDDEN and audited; the live estimates hold nothing of the run's domain, on which she has no grant, while alice's count the run; the administrator may rebuild", async () => {
      const rebuild = await (await signed('mallory', council('v1.capability.estimates'), { rebuild: true })).send();
      expectRefused(rebuild, 'FORBIDDEN', [...proposers, chair]);
      expect(rebuild.reply['estimates']).toBeUndefined();
      const entries = await eventually(
        async () => {
          const found = await h.auditEntries({ outcome: 'rejected', action: 'rejected:council.capability.estimates' });
          return found.some((e) => e.actor === 'mallory' && e.error?.code === 'FORBIDDEN') ? found : undefined;
        },
        10_000,
        'the refusal audited',
      );
      expect(entries.length).toBeGreaterThan(0);

      const live = await (await signed('mallory', council('v1.capability.estimates'), {})).send();
      expect(live.reply).toMatchObject({ ok: true, rebuilt: false, estimates: [], ended_runs: 0 });
      const owners = await (await signed('alice', council('v1.capability.estimates'), {})).send();
      expect(owners.reply).toMatchObject({ ok: true, rebuilt: false });
      expect(owners.reply['ended_runs']).toBeGreaterThanOrEqual(1);
      const rebuilt = await (await signed('admin', council('v1.capability.estimates'), { rebuild: true })).send();
      expect(rebuilt.reply).toMatchObject({ ok: true, rebuilt: true });
    });

    it("given the ended run, when mallory reads it as herself or declaring alice, then NOT_AUTHORIZED_ROLE or FORBIDDEN and no record; the observer and a panel member read it without the mapping or labels; alice's copy has the mapping", async () => {
      const owner = await (await signed('alice', council('v1.get'), { run_id: runId })).send();
      const mapping = (owner.reply['run_record'] as { anonymization: { mapping: Array<{ label: string; author_member_id: string }> } })
        .anonymization.mapping;
      expect(mapping).toHaveLength(3);
      const labels = mapping.map((m) => m.label);

      const asHerself = await (await signed('mallory', council('v1.get'), { run_id: runId })).send();
      expectRefused(asHerself, 'NOT_AUTHORIZED_ROLE', labels);
      const declaringAlice = await (await signed('mallory', council('v1.get'), { run_id: runId, actor: 'alice' })).send();
      expectRefused(declaringAlice, 'FORBIDDEN', labels, 'actor');
      for (const r of [asHerself, declaringAlice]) expect(r.reply['run_record']).toBeUndefined();

      for (const reader of ['auditor', 'cr-builder']) {
        const r = await (await signed(reader, council('v1.get'), { run_id: runId })).send();
        const record = r.reply['run_record'] as { anonymization: unknown; lineage: Array<Record<string, unknown>> };
        expect(record.anonymization).toEqual({ restricted: true, withheld: true, mapping: [] });
        expect(record.lineage.every((l) => l['label'] === undefined)).toBe(true);
      }
    });

    it("given alice's signed council.v1.get of the ended run (the copy with the mapping) captured on the wire, when replayed, then UNAUTHENTICATED and no record, no mapping", async () => {
      const captured = await signed('alice', council('v1.get'), { run_id: runId });
      const first = await captured.send();
      const labels = (first.reply['run_record'] as { anonymization: { mapping: Array<{ label: string }> } }).anonymization.mapping.map(
        (m) => m.label,
      );
      expect(labels).toHaveLength(3);
      const replay = await captured.send();
      expectRefused(replay, 'UNAUTHENTICATED', [...labels, 'anonymization']);
      expect(replay.reply.error?.message).toMatch(/replayed/);
      expect(replay.reply['run_record']).toBeUndefined();
    });

    it("given mallory's signed estimates query captured on the wire, when replayed, then UNAUTHENTICATED and no estimates", async () => {
      const captured = await signed('mallory', council('v1.capability.estimates'), {});
      expect((await captured.send()).reply.ok).toBe(true);
      const replay = await captured.send();
      expectRefused(replay, 'UNAUTHENTICATED', [...proposers, chair]);
      expect(replay.reply['estimates']).toBeUndefined();
    });
  });

  /**
   * A console stream authorizes each decision with the reader's grants and clearance when it is
   * sent: a grant revoked, or a reader deactivated, after the stream opened applies at once, as
   * it does to a fresh request (docs/security.md).
   */
  describe('a console stream opened before the reader lost her right to read', () => {
    async function afterLosingTheRight(token: string, participant: string, lose: () => Promise<unknown>) {
      const victim = await consoleStream(token);
      const witness = await consoleStream(RISKPUB_TOKEN);
      try {
        const before = await decided('alice', 'bob', 'risk', { n: `before-${participant}` });
        await eventually(async () => (victim.has(before) ? true : undefined), 10_000, 'the first risk decision');
        await lose();
        const after = await decided('alice', 'bob', 'risk', { n: `after-${participant}` });
        await eventually(async () => (witness.has(after) ? true : undefined), 10_000, 'the later decision on the stream');
        await new Promise((r) => setTimeout(r, 300));
        return { stillDelivered: victim.has(after) };
      } finally {
        victim.close();
        witness.close();
      }
    }

    it('given watcher reading the console stream with a grant on risk, when an administrator revokes that grant, then a later risk decision no longer reaches her (a fresh GET already leaves risk out)', async () => {
      const r = await afterLosingTheRight(WATCHER_TOKEN, 'watcher', async () => {
        await h.admin.call(REGISTRY_PATTERNS.revokeGrant, { participant_id: 'watcher', domain: 'risk' });
        const fresh = await http('/escalations?status=all', WATCHER_TOKEN);
        expect(fresh.status).toBe(200);
        expect(fresh.text).not.toContain(secretId);
      });
      expect(r).toEqual({ stillDelivered: false });
    });

    it('given leaver reading the console stream with a grant on risk, when an administrator deactivates her, then a later risk decision no longer reaches her (a fresh GET is already 401)', async () => {
      const r = await afterLosingTheRight(LEAVER_TOKEN, 'leaver', async () => {
        await h.admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: 'leaver', reason: 'left the company' });
        expect((await http('/escalations', LEAVER_TOKEN)).status).toBe(401);
      });
      expect(r).toEqual({ stillDelivered: false });
    });
  });
});
