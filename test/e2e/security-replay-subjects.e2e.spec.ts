import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { POLICY_PATTERNS } from '@conclave/acp-protocol';
import { ACP_COMMANDS, acpStreamNames, COUNCIL_COMMANDS } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import {
  cleanBehaviour,
  frameChallengerBehaviour,
  ScriptedBehaviour,
  scriptedGoalContract,
  scriptedPanel,
  ScriptedMember,
} from '@conclave/sdk/testing';
import { ApiReply, eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

const encoder = new TextEncoder();

/** A signed request as it went over the wire: what an eavesdropper captures and sends again. */
interface Captured {
  subject: string;
  bytes: Uint8Array;
  headers: Record<string, string>;
}

/**
 * One command subject under attack. `victim` is the participant entitled to send it and signs
 * `replayed` (sent once, then replayed byte for byte) and `honest` (whose headers the attacker
 * takes for `forged`, her own body, and which the victim then sends as she signed it); `forged` is
 * what the attacker wants done instead. `first` and `own` are the replies to the victim's own sends
 * (a business refusal is fine there: the attack is on the second send).
 */
interface Row {
  subject: string;
  victim: string;
  replayed: unknown;
  honest: unknown;
  forged: unknown;
  first?: Partial<ApiReply>;
  own?: Partial<ApiReply>;
  /** What the first reply tells (a run id the service chose). */
  onFirst?: (first: ApiReply) => void;
}

/** A run as its owner reads it: what these tests look at. */
interface RunView {
  terminal: { reason: string } | null;
  goal_contract_revisions: Array<{ goal_contract: { goal_contract_id: string; success_criteria: string[] } }>;
  outcomes: Array<{ outcome_id: string; summary: string }>;
  participants: Array<{ member_id: string }>;
  acp_bridge?: unknown;
  artifacts: { frame_checks: Array<{ frame_check_id: string; result: string }> };
}

/** The typed refusal of a nonce already used, and of a signature that is not the claimed participant's over these bytes. */
const REPLAYED = { ok: false, error: { code: 'UNAUTHENTICATED', message: expect.stringMatching(/^replayed request: nonce /) } };
const FORGED = {
  ok: false,
  error: { code: 'UNAUTHENTICATED', message: expect.stringMatching(/^signature does not verify with any key of /) },
};

/**
 * A captured signed request replayed (same subject, headers, body and nonce) and a forged one (the
 * victim's valid signature over one body sent with another; headers naming the victim, signed with
 * mallory's key), on every command subject the other security tests do not replay or forge, with
 * CONCLAVE_AUTH_MODE=required:
 *
 * - intake: `acp.v1.respond` (bob, granted on risk) and `acp.v1.escalate` (alice, the author);
 * - the registry's writes (`acp.v1.participants.register | update | rotate-key | cancel-rotation |
 *   revoke-key | grant | revoke-grant | deactivate`), `acp.v1.policies.set` and `.get`, by the
 *   administrator;
 * - the Council, by alice, the decision owner: `council.v1.start`, `frame-decline`,
 *   `goal-contract`, `interrupt`, `outcome`, `outcome.record`, `acp.propose`, and the read models
 *   `capability.calibration` and `capability.concentration`.
 *
 * Each replay is refused for its nonce (docs/security.md "Authenticating a command": the nonce is
 * claimed once, after the signature verified, before any handler runs), also when sent again after
 * later commands changed the state it would act on (a grant replayed after its revocation, a
 * deactivation after a later registration...). Each forgery is refused for its signature, and
 * spends none of the victim's nonces: her headers then carry her own body. After every refusal
 * the state it would have changed is read back unchanged (a participant's record, a policy, a
 * proposal, a run as its owner reads it) and the event log's last sequence has not moved; the
 * refusal carries nothing but `ok` and `error`.
 *
 * The Council runs: D1 and D2 decided (council:L5); F1 (for the replays) and F2 (for the forgeries)
 * waiting for alice on a frame challenge, then on revisions and a synthesis nobody answers; Q1 and
 * Q2 started with a panel nobody seats. Before each attack the log is let settle (members may still
 * be answering a run), so that the last sequence not moving means the attack appended nothing.
 */
describe('security: captured signed requests replayed, and signed requests forged, on every command subject (authentication required)', () => {
  const SERVICE = 'council-service';
  const serviceKeys = generateParticipantKeys();
  const keyDir = mkdtempSync(join(tmpdir(), 'replay-subjects-'));
  const keyFile = join(keyDir, 'council-service.pem');
  writeFileSync(keyFile, serviceKeys.privateKeyPem, { mode: 0o600 });
  const h = new SecureConclaveHarness({ CONCLAVE_COUNCIL_PARTICIPANT: SERVICE, CONCLAVE_COUNCIL_KEY_FILE: keyFile });
  const councilPrefix = `c${h.prefix}`;
  const acp = (pattern: string) => `${h.prefix}.${pattern}`;
  const council = (pattern: string) => `${councilPrefix}.${pattern}`;
  const pem = (id: string) => h.privateKeyOf(id);
  const now = () => new Date().toISOString();
  const members: ScriptedMember[] = [];
  let decisions: CouncilDecisionCollector | undefined;

  const panelOf = (tag: string) => ({ proposers: ['b', 's', 'o'].map((l) => `rp-${tag}-${l}`), chair: `rp-${tag}-c` });
  const idsOf = (p: { proposers: string[]; chair: string }) => [...p.proposers, p.chair];
  const framed = (tag: string) => ({ ...panelOf(tag), observer: `rp-${tag}-x` });
  const panels = { d1: panelOf('d1'), d2: panelOf('d2'), f1: framed('f1'), f2: framed('f2'), q: panelOf('q') };

  beforeAll(async () => {
    await h.start('intake', 'council');
    // The council service posts to ACP as its own participant, with its own key and grant.
    await h.admin.call(REGISTRY_PATTERNS.register, { participant_id: SERVICE, roles: ['agent'], public_key: serviceKeys.publicKey });
    await h.admin.call(REGISTRY_PATTERNS.grant, {
      participant_id: SERVICE,
      domain: 'risk',
      domain_authority: 0.9,
      trust_score: 0.9,
      actions: ['propose', 'escalate'],
    });
    await h.seed([
      { participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'bob', grants: [{ domain: 'risk', domain_authority: 0.8, trust_score: 0.8 }] },
      { participant_id: 'mallory', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'rp-target', grants: [{ domain: 'ops', domain_authority: 0.3, trust_score: 0.3 }] },
      ...['rp-rot1', 'rp-rot2', 'rp-rot3', 'rp-gone1', 'rp-gone2', panels.f1.observer, panels.f2.observer].map((participant_id) => ({
        participant_id,
      })),
      ...Object.values(panels)
        .flatMap(idsOf)
        .map((participant_id) => ({ participant_id })),
    ]);
  });

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await jsm.streams.delete(acpStreamNames(h.run).councilOutcomes).catch(() => undefined);
    await h.stop();
    rmSync(keyDir, { recursive: true, force: true });
  });

  /** `body` signed by `id` for `subject`, with `id`'s own key unless another is given (not sent). */
  function capture(id: string, subject: string, body: unknown, privateKeyPem = pem(id)): Captured {
    const bytes = encoder.encode(JSON.stringify(body));
    return { subject, bytes, headers: ed25519Signer(id, privateKeyPem)(subject, bytes) };
  }

  /** A raw NATS request with exactly the captured headers, and its bytes unless others are given. */
  async function send(c: Captured, bytes: Uint8Array = c.bytes): Promise<ApiReply> {
    return (await h.rawRequest(c.subject, bytes, c.headers)).reply;
  }

  /** A request signed by `id` with its own key. */
  const signed = (id: string, subject: string, body: unknown) => h.signedRequest<ApiReply>(id, subject, body);

  const logHead = () => h.logHead();

  /** The log's last sequence once nothing has been appended for 300 ms (a run's members may still be answering). */
  async function settledHead(): Promise<number> {
    let head = await logHead();
    let since = Date.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const next = await logHead();
      if (next !== head) [head, since] = [next, Date.now()];
      else if (Date.now() - since >= 300) return head;
    }
  }

  /**
   * Every row, in order: sent once by its victim, its capture replayed at once, then all of them
   * replayed again after the later rows changed what they act on. Each replay: REPLAYED, nothing
   * else in the reply, and `state` (with the log's head) unchanged.
   */
  async function replayEach(rows: Row[], state: () => Promise<unknown>, head: () => Promise<number> = logHead) {
    const captured: Captured[] = [];
    for (const row of rows) {
      const c = capture(row.victim, row.subject, row.replayed);
      const first = await send(c);
      expect({ subject: row.subject, first }).toMatchObject({ subject: row.subject, first: row.first ?? { ok: true } });
      row.onFirst?.(first);
      const before = { head: await head(), state: await state() };
      const replay = await send(c);
      expect({ subject: row.subject, replay }).toMatchObject({ subject: row.subject, replay: REPLAYED });
      expect({ subject: row.subject, keys: Object.keys(replay).sort() }).toEqual({ subject: row.subject, keys: ['error', 'ok'] });
      expect({ subject: row.subject, head: await logHead(), state: await state() }).toEqual({ subject: row.subject, ...before });
      captured.push(c);
    }
    const before = { head: await head(), state: await state() };
    for (const c of captured) {
      const replay = await send(c);
      expect({ subject: c.subject, replay }).toMatchObject({ subject: c.subject, replay: REPLAYED });
    }
    expect({ head: await logHead(), state: await state() }).toEqual(before);
  }

  /**
   * Every row: the victim's headers over `honest` sent with the `forged` body, and `forged` under
   * headers naming the victim signed with mallory's key: FORGED each, nothing else in the reply,
   * `state` and the log's head unchanged; then the victim's headers with her own body are taken
   * (`own`): the forgery spent none of her nonces.
   */
  async function forgeEach(rows: Row[], state: () => Promise<unknown>, head: () => Promise<number> = logHead) {
    for (const row of rows) {
      const honest = capture(row.victim, row.subject, row.honest);
      const before = { head: await head(), state: await state() };
      const tampered = await send(honest, encoder.encode(JSON.stringify(row.forged)));
      const impersonated = await send(capture(row.victim, row.subject, row.forged, pem('mallory')));
      expect({ subject: row.subject, tampered, impersonated }).toMatchObject({
        subject: row.subject,
        tampered: FORGED,
        impersonated: FORGED,
      });
      for (const reply of [tampered, impersonated])
        expect({ subject: row.subject, keys: Object.keys(reply).sort() }).toEqual({ subject: row.subject, keys: ['error', 'ok'] });
      expect({ subject: row.subject, head: await logHead(), state: await state() }).toEqual({ subject: row.subject, ...before });
      const own = await send(honest);
      expect({ subject: row.subject, own }).toMatchObject({ subject: row.subject, own: row.own ?? { ok: true } });
    }
  }

  describe('intake: acp.v1.respond and acp.v1.escalate', () => {
    const proposals: string[] = [];
    const response = (proposalId: string, extra: Record<string, unknown> = {}) => ({
      schema_version: '1.0',
      proposal_id: proposalId,
      participant_id: 'bob',
      response_type: 'endorse',
      confidence: 0.9,
      reason: null,
      ...extra,
    });
    const escalation = (proposalId: string, reason: string) => ({ proposal_id: proposalId, reason, requested_by: 'alice' });

    /** The four proposals as alice (granted on risk) reads them. */
    const state = async () =>
      Promise.all(proposals.map(async (id) => (await signed('alice', acp(ACP_COMMANDS.get), { proposal_id: id })).reply['proposal']));

    beforeAll(async () => {
      const alice = await h.clientFor('alice');
      for (let i = 0; i < 4; i++)
        proposals.push(
          (await alice.propose({ domain: 'risk', author: 'alice', payload: { loan: i }, quorum: 5, created_at: now() })).proposal_id,
        );
    });

    /** P1 endorsed by bob and P3 escalated by alice, replayed; P2's endorsement and escalation forged into a rejection of P2 and an escalation of P4. */
    const rows = (): Row[] => {
      const [p1, p2, p3, p4] = proposals;
      return [
        {
          subject: acp(ACP_COMMANDS.respond),
          victim: 'bob',
          replayed: response(p1),
          honest: response(p2),
          forged: response(p2, { response_type: 'reject', confidence: 1, reason: 'forged by mallory' }),
          own: { ok: true, proposal: { proposal_id: p2, responses: [{ participant_id: 'bob', response_type: 'endorse' }] } },
        },
        {
          subject: acp(ACP_COMMANDS.escalate),
          victim: 'alice',
          replayed: escalation(p3, 'let a human decide'),
          honest: escalation(p2, 'alice wants a human here'),
          forged: escalation(p4, 'mallory wants this one stalled'),
          first: { ok: true, proposal: { proposal_id: p3, status: 'escalated' } },
          own: { ok: true, proposal: { proposal_id: p2, status: 'escalated' } },
        },
      ];
    };

    it("given bob's endorsement and alice's escalation, each recorded once, when their captured bytes and headers are sent again, at once and after later commands, then UNAUTHENTICATED (replayed nonce) each and no event appended; bob's own identical retry, freshly signed, is answered ok as the first was and appends nothing either (design.md section 5)", async () => {
      await replayEach(rows(), state);
      const [p1] = (await state()) as Array<{ responses: Array<{ participant_id: string }> }>;
      expect(p1.responses.map((r) => r.participant_id)).toEqual(['bob']);

      // The idempotent retry of design.md section 5 is a new request (a new nonce), never the captured one.
      const head = await logHead();
      const retry = await signed('bob', acp(ACP_COMMANDS.respond), response(proposals[0]));
      expect(retry.reply).toMatchObject({ ok: true, proposal: { proposal_id: proposals[0], status: 'pending' } });
      expect((retry.reply['proposal'] as { responses: unknown[] }).responses).toHaveLength(1);
      expect(await logHead()).toBe(head);
    });

    it("given bob's signed headers over his endorsement of P2 and alice's over her escalation of P2, when they are sent with a rejection of P2 instead, or with the escalation of P4, or those bodies come under headers naming bob or alice signed with mallory's key, then UNAUTHENTICATED each, the proposals unchanged and no event appended; bob's and alice's own bodies then pass with their headers", async () => {
      await forgeEach(rows(), state);
      const after = (await state()) as Array<{ status: string }>;
      expect(after.map((p) => p.status)).toEqual(['pending', 'escalated', 'escalated', 'pending']);
    });
  });

  describe('the registry and the domain policies: every write of acp.v1.participants.*, acp.v1.policies.set and .get', () => {
    const keys = Array.from({ length: 4 }, () => generateParticipantKeys().publicKey);
    const attackerKey = generateParticipantKeys().publicKey;
    const policy = (domain: string, version: number, description: string) => ({
      schema_version: '1.0',
      domain,
      version,
      description,
      quorum_policies: [{ kind: 'two-of-them', min_responses: 2 }],
      default_quorum_policy: { kind: 'two-of-them' },
    });
    const mallorys = {
      ...policy('risk', 1, "mallory's: nothing passes without her"),
      quorum_policies: [{ kind: 'mallory-decides', min_responses: 1, required_participants: ['mallory'] }],
      default_quorum_policy: { kind: 'mallory-decides' },
    };
    const watched = ['alice', 'mallory', 'rp-target', 'rp-new1', 'rp-new2', 'rp-rot1', 'rp-rot2', 'rp-rot3', 'rp-gone1', 'rp-gone2'];

    /** Each watched participant's record as the administrator reads it (null when not registered), and both policies. */
    async function state() {
      const records = Object.fromEntries(
        await Promise.all(
          watched.map(async (id) => {
            const r = await signed('admin', acp(REGISTRY_PATTERNS.get), { participant_id: id });
            return [id, r.reply.ok ? (r.reply['participant'] as Record<string, unknown>) : null] as const;
          }),
        ),
      );
      const policies = await Promise.all(
        ['risk', 'rp-pol'].map(async (domain) => (await signed('admin', acp(POLICY_PATTERNS.get), { domain })).reply),
      );
      return { records, policies };
    }

    const rows: Row[] = [
      {
        subject: acp(REGISTRY_PATTERNS.register),
        victim: 'admin',
        replayed: { participant_id: 'rp-new1', roles: ['agent'], public_key: keys[0] },
        honest: { participant_id: 'rp-new2', roles: ['agent'], public_key: keys[1] },
        forged: { participant_id: 'rp-new2', roles: ['administrator'], public_key: attackerKey },
        own: { ok: true, participant: { participant_id: 'rp-new2', roles: ['agent'] } },
      },
      {
        subject: acp(REGISTRY_PATTERNS.update),
        victim: 'admin',
        replayed: { participant_id: 'rp-target', clearance: 'internal' },
        honest: { participant_id: 'rp-target', display_name: 'Target' },
        forged: { participant_id: 'mallory', roles: ['agent', 'administrator'], clearance: 'restricted' },
      },
      {
        subject: acp(REGISTRY_PATTERNS.rotateKey),
        victim: 'admin',
        replayed: { participant_id: 'rp-target', public_key: keys[2] },
        honest: { participant_id: 'rp-target', public_key: keys[3] },
        forged: { participant_id: 'alice', public_key: attackerKey },
      },
      {
        subject: acp(REGISTRY_PATTERNS.cancelRotation),
        victim: 'admin',
        replayed: { participant_id: 'rp-rot1' },
        honest: { participant_id: 'rp-rot2', reason: 'confirmed with rp-rot2: not hers' },
        forged: { participant_id: 'rp-rot3', reason: 'mallory keeps rp-rot3 on its old key' },
      },
      {
        subject: acp(REGISTRY_PATTERNS.revokeKey),
        victim: 'admin',
        replayed: { participant_id: 'rp-target', key_id: 'k1', reason: 'rotated out' },
        honest: { participant_id: 'rp-target', key_id: 'k2', reason: 'rotated out' },
        forged: { participant_id: 'alice', key_id: 'k1', reason: 'locked out by mallory' },
      },
      {
        subject: acp(REGISTRY_PATTERNS.grant),
        victim: 'admin',
        replayed: { participant_id: 'rp-target', domain: 'billing', domain_authority: 0.5, trust_score: 0.5 },
        honest: { participant_id: 'rp-target', domain: 'payments', domain_authority: 0.4, trust_score: 0.4 },
        forged: { participant_id: 'mallory', domain: 'risk', domain_authority: 1, trust_score: 1 },
      },
      {
        subject: acp(REGISTRY_PATTERNS.revokeGrant),
        victim: 'admin',
        replayed: { participant_id: 'rp-target', domain: 'billing' },
        honest: { participant_id: 'rp-target', domain: 'payments' },
        forged: { participant_id: 'alice', domain: 'risk' },
      },
      {
        subject: acp(REGISTRY_PATTERNS.deactivate),
        victim: 'admin',
        replayed: { participant_id: 'rp-gone1', reason: 'left' },
        honest: { participant_id: 'rp-gone2', reason: 'left' },
        forged: { participant_id: 'alice', reason: 'gone, says mallory' },
        own: { ok: true, participant: { participant_id: 'rp-gone2', status: 'deactivated' } },
      },
      {
        subject: acp(POLICY_PATTERNS.set),
        victim: 'admin',
        replayed: { policy: policy('rp-pol', 1, 'two responses') },
        honest: { policy: policy('rp-pol', 2, 'two responses, again') },
        forged: { policy: mallorys },
        own: { ok: true, policy: { domain: 'rp-pol', version: 2 } },
      },
      {
        subject: acp(POLICY_PATTERNS.get),
        victim: 'admin',
        replayed: { domain: 'rp-pol' },
        honest: { domain: 'rp-pol', version: 1 },
        forged: { domain: 'risk' },
        own: { ok: true, policy: { domain: 'rp-pol', version: 1 } },
      },
    ];

    beforeAll(async () => {
      // Pending rotations of their own keys (each waits for its cool-down) for cancel-rotation.
      for (const id of ['rp-rot1', 'rp-rot2', 'rp-rot3']) {
        const r = await signed(id, acp(REGISTRY_PATTERNS.rotateKey), {
          participant_id: id,
          public_key: generateParticipantKeys().publicKey,
        });
        expect(r.reply).toMatchObject({ ok: true, participant: { pending_rotation: expect.any(Object) } });
      }
    });

    it('given each registry write and policies.set/get signed by the administrator and recorded once, when its captured bytes and headers are sent again, at once and after the later writes (a grant after its revocation, a rotation cancelled after...), then UNAUTHENTICATED (replayed nonce) each, every record and policy unchanged and no event appended', async () => {
      await replayEach(rows, state);
      const { records } = await state();
      // What each first send did, and no more: the grant replayed after its revocation did not come back.
      expect(records['rp-target']).toMatchObject({ clearance: 'internal', keys: [{ status: 'revoked' }, { status: 'active' }] });
      expect(Object.keys(records['rp-target']?.['grants'] as object)).toEqual(['ops']);
      expect(records['rp-new1']).toMatchObject({ status: 'active' });
      expect(records['rp-new2']).toBeNull();
      expect(records['rp-rot1']?.['pending_rotation']).toBeUndefined();
      expect(records['rp-rot2']).toMatchObject({ pending_rotation: expect.any(Object) });
      expect(records['rp-gone1']).toMatchObject({ status: 'deactivated' });
    });

    it("given the administrator's signed headers over each write (a newcomer registered, a grant, a deactivation...), when they are sent with mallory's body instead (the newcomer an administrator with her key, her grant on risk, alice's key rotated to hers or revoked, alice deactivated, mallory's policy for risk), or that body comes under headers naming the administrator signed with mallory's key, then UNAUTHENTICATED each, alice and mallory unchanged, no event appended; the administrator's own bodies then pass with her headers", async () => {
      const before = await state();
      await forgeEach(rows, state);
      const after = await state();
      for (const id of ['alice', 'mallory', 'rp-rot3'])
        expect({ id, record: after.records[id] }).toEqual({ id, record: before.records[id] });
      expect(after.records['alice']).toMatchObject({ status: 'active', keys: [{ key_id: 'k1', status: 'active' }], grants: { risk: {} } });
      expect(after.records['mallory']).toMatchObject({ roles: ['agent'], clearance: 'internal' });
      expect(Object.keys(after.records['mallory']?.['grants'] as object)).toEqual(['ops']);
      expect(after.records['rp-new2']).toMatchObject({ roles: ['agent'], keys: [{ public_key: keys[1] }] });
      expect(after.policies[0]).toMatchObject({ ok: true, policy: null });
      // alice's key still signs: nobody rotated, revoked or deactivated it.
      expect((await signed('alice', acp(REGISTRY_PATTERNS.get), { participant_id: 'alice' })).reply).toMatchObject({ ok: true });
    });
  });

  describe('council: every write of council.v1.* and the capability read models', () => {
    const runIds = { d1: `rp_d1_${h.run}`, d2: `rp_d2_${h.run}`, f1: `rp_f1_${h.run}`, f2: `rp_f2_${h.run}`, q1: '', q2: `rp_q2_${h.run}` };
    const goal = (id: string) => scriptedGoalContract({ goal_contract_id: id, decision_owner: 'alice', domain: 'risk' });
    const quiet = { stage_timeout_ms: 60_000 };
    let decisionId = '';
    let action = '';

    /** Each run as alice, its decision owner, reads it (null when there is none). */
    async function state(): Promise<Array<RunView | null>> {
      return Promise.all(
        Object.values(runIds).map(async (runId) => {
          if (!runId) return null;
          const r = await signed('alice', council(COUNCIL_COMMANDS.get), { run_id: runId });
          return r.reply.ok ? (r.reply['run_record'] as RunView) : null;
        }),
      );
    }

    const start = (goalContractId: string, runId?: string) => ({
      ...(runId ? { run_id: runId } : {}),
      goal_contract: goal(goalContractId),
      panel: scriptedPanel(panels.q),
      policy: quiet,
    });
    const outcome = (id: string, summary = 'ledger reconciled for a week') => ({
      outcome_id: id,
      observed_at: '2026-11-30T12:00:00.000Z',
      summary,
      source: 'ops dashboard',
    });
    const structured = (id: string, verdict = 'success') => ({
      outcome_id: id,
      decision_id: decisionId,
      observed_at: '2026-11-30T12:00:00.000Z',
      source_kind: 'operational-observation',
      verdict,
      actions: [{ action, status: verdict === 'success' ? 'done' : 'abandoned' }],
      summary: verdict === 'success' ? 'ledger reconciled' : 'the migration failed',
      evidence_refs: ['dash-reconciliation'],
    });

    /** The table; `frameRun` is a run whose frame challenge fc-1 waits for alice (F1 for the replays, F2 for the forgeries). */
    const rows = (frameRun: string): Row[] => [
      {
        subject: council(COUNCIL_COMMANDS.start),
        victim: 'alice',
        replayed: start('gc-q1'),
        honest: start('gc-q2', runIds.q2),
        forged: { ...start('gc-q2', runIds.q2), panel: scriptedPanel({ ...panels.q, chair: 'mallory' }) },
        own: { ok: true, run_id: runIds.q2 },
        onFirst: (first) => (runIds.q1 = String(first['run_id'])),
      },
      {
        subject: council(COUNCIL_COMMANDS.declineFrame),
        victim: 'alice',
        replayed: { run_id: frameRun, frame_check_id: 'fc-1', reason: 'the frame holds this quarter' },
        honest: { run_id: frameRun, frame_check_id: 'fc-1', reason: 'the frame holds, as said' },
        forged: { run_id: frameRun, frame_check_id: 'fc-1', reason: 'mallory: auditors are not stakeholders' },
      },
      {
        subject: council(COUNCIL_COMMANDS.goalContract),
        victim: 'alice',
        // Comparable revisions (question, goal, success criteria and non-goals kept): the run goes on where it was.
        replayed: {
          run_id: frameRun,
          goal_contract: { ...goal('gc-rev1'), constraints: ['team of four', 'one quarter', 'auditor sign-off'] },
        },
        honest: { run_id: frameRun, goal_contract: { ...goal('gc-rev2'), unknowns: ['peak load next quarter', 'auditor availability'] } },
        forged: { run_id: frameRun, goal_contract: { ...goal('gc-rev2'), success_criteria: ['mallory approves'], constraints: [] } },
      },
      {
        subject: council(COUNCIL_COMMANDS.interrupt),
        victim: 'alice',
        replayed: { run_id: frameRun, reason: 'alice stops the run' },
        honest: { run_id: frameRun, reason: 'alice stops it again' },
        forged: { run_id: runIds.q2, reason: 'mallory stops the other run' },
      },
      {
        subject: council(COUNCIL_COMMANDS.outcome),
        victim: 'alice',
        replayed: { run_id: runIds.d1, outcome: outcome('o-1') },
        honest: { run_id: runIds.d1, outcome: outcome('o-2') },
        forged: { run_id: runIds.d1, outcome: { ...outcome('o-2', 'the migration failed'), source: 'mallory' } },
      },
      {
        subject: council(COUNCIL_COMMANDS.recordOutcome),
        victim: 'alice',
        replayed: { run_id: runIds.d1, outcome: structured('so-1') },
        honest: { run_id: runIds.d1, outcome: structured('so-2') },
        forged: { run_id: runIds.d1, outcome: structured('so-2', 'failure') },
      },
      {
        subject: council(COUNCIL_COMMANDS.acpPropose),
        victim: 'alice',
        replayed: { run_id: runIds.d1, quorum: 2 },
        honest: { run_id: runIds.d1, quorum: 2 },
        forged: { run_id: runIds.d2, quorum: 1 },
      },
      {
        subject: council(COUNCIL_COMMANDS.calibration),
        victim: 'alice',
        replayed: { domain: 'risk' },
        honest: {},
        forged: { domain: 'risk', confidence_probabilities: { low: 0.5, medium: 0.5, high: 0.5 } },
      },
      {
        subject: council(COUNCIL_COMMANDS.concentration),
        victim: 'alice',
        replayed: { domain: 'risk' },
        honest: { period: 'week' },
        forged: { domain: 'risk', subject: 'model_family' },
      },
    ];

    beforeAll(async () => {
      decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
      const seat = (ids: string[], behaviour: () => ScriptedBehaviour) => {
        for (const id of ids) members.push(new ScriptedMember(h.nc, id, behaviour(), councilPrefix, ed25519Signer(id, pem(id))).start());
      };
      seat([...idsOf(panels.d1), ...idsOf(panels.d2)], () => ({ score: () => 3 }));
      // F1, F2: a frame challenge of gc-001 waits for alice; revisions and syntheses are never answered, so neither decides.
      for (const p of [panels.f1, panels.f2]) {
        seat(idsOf(p), () => cleanBehaviour({ silent: (t) => t.stage === 'revision' || t.stage === 'synthesis' }));
        seat([p.observer], () => frameChallengerBehaviour('gc-001'));
      }
      const l5 = { level: 'council:L5', aggregation: 'borda', stage_timeout_ms: 10_000 };
      const starts = [
        { run_id: runIds.d1, goal_contract: goal('gc-d1'), panel: scriptedPanel(panels.d1), policy: l5 },
        { run_id: runIds.d2, goal_contract: goal('gc-d2'), panel: scriptedPanel(panels.d2), policy: l5 },
        ...[
          [runIds.f1, panels.f1],
          [runIds.f2, panels.f2],
        ].map(([run_id, p]) => ({
          run_id,
          goal_contract: goal('gc-001'),
          panel: scriptedPanel({ ...(p as typeof panels.f1), frameObserver: (p as typeof panels.f1).observer }),
          policy: quiet,
        })),
      ];
      for (const s of await Promise.all(starts.map((body) => signed('alice', council(COUNCIL_COMMANDS.start), body))))
        expect(s.reply).toMatchObject({ ok: true });
      const d1 = await decisions.waitFor(runIds.d1);
      expect(d1.terminal_state).toMatch(/^decided/);
      const record = d1.decision_record as { decision_id: string; actions: string[] };
      [decisionId, action] = [record.decision_id, record.actions[0]];
      expect((await decisions.waitFor(runIds.d2)).terminal_state).toMatch(/^decided/);
      for (const runId of [runIds.f1, runIds.f2])
        await eventually(
          async () => {
            const r = await signed('alice', council(COUNCIL_COMMANDS.get), { run_id: runId });
            const checks = (r.reply['run_record'] as RunView | undefined)?.artifacts.frame_checks ?? [];
            return checks.some((c) => c.frame_check_id === 'fc-1' && c.result === 'frame-challenge') ? true : undefined;
          },
          15_000,
          `the frame challenge of ${runId}`,
        );
    }, 30_000);

    it('given each Council command signed by alice, the decision owner, and sent once (a start, a declined frame challenge, a revision, an interrupt, outcomes, the post to ACP, the read models), when its captured bytes and headers are sent again, at once and after the later commands, then UNAUTHENTICATED (replayed nonce) each, no second run started, every run unchanged as alice reads it and no event appended', async () => {
      await replayEach(rows(runIds.f1), state, settledHead);
      const [d1, , f1, , q1] = await state();
      expect(f1).toMatchObject({ terminal: { reason: 'human-interrupt' } });
      expect(f1?.goal_contract_revisions.map((g) => g.goal_contract.goal_contract_id)).toEqual(['gc-001', 'gc-rev1']);
      expect(d1?.outcomes.map((o) => o.outcome_id)).toEqual(['o-1', 'so-1']);
      expect(d1?.acp_bridge).toBeDefined();
      // The one run the start asked for, still waiting for its members: the replays started none (the log did not move).
      expect(q1).toMatchObject({ terminal: null });
    }, 40_000);

    it("given alice's signed headers over each Council command, when they are sent with mallory's body instead (a start with her as chair, her reason for the decline, her GoalContract, the other run interrupted, a failed outcome, the other decision posted to ACP, another read), or that body comes under headers naming alice signed with mallory's key, then UNAUTHENTICATED each, every run unchanged as alice reads it and no event appended; alice's own bodies then pass with her headers", async () => {
      await forgeEach(rows(runIds.f2), state, settledHead);
      const [d1, d2, , f2, , q2] = await state();
      expect(f2).toMatchObject({ terminal: { reason: 'human-interrupt' } });
      expect(f2?.goal_contract_revisions.map((g) => g.goal_contract.success_criteria)).not.toContainEqual(['mallory approves']);
      expect(d1?.outcomes.map((o) => o.outcome_id)).toEqual(['o-1', 'so-1', 'o-2', 'so-2']);
      expect(d1?.outcomes.map((o) => o.summary)).not.toContain('the migration failed');
      expect(d2?.acp_bridge).toBeUndefined();
      expect(q2).toMatchObject({ terminal: null });
      expect(q2?.participants.map((m) => m.member_id)).toEqual(idsOf(panels.q));
    }, 40_000);
  });
});
