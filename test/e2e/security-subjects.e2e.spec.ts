import { POLICY_PATTERNS } from '@conclave/acp-protocol';
import { ACP_COMMANDS, acpStreamNames, COUNCIL_COMMANDS } from '@conclave/messaging';
import { AUTH_HEADERS, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { CouncilClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { ApiReply, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

/**
 * The request/reply subjects that no other security test attacks unauthenticated or as another
 * participant (CONCLAVE_AUTH_MODE=required), each attacked here:
 *
 * - intake: `acp.v1.respond` and `acp.v1.escalate` without credentials (the other security tests
 *   send them forged, stale or as another participant, never unsigned);
 * - the registry's writes (`acp.v1.participants.register | update | rotate-key | cancel-rotation |
 *   revoke-key | grant | revoke-grant | deactivate`) and `acp.v1.policies.set`, without credentials
 *   and signed by an agent that is not an administrator acting on someone else;
 * - the Council: `council.v1.goal-contract` and `council.v1.frame-decline` without credentials,
 *   and `council.v1.frame-decline` (and `goal-contract` declaring the owner) by a participant with
 *   no role in the run; and once the run has decided, `interrupt`, `frame-decline` and
 *   `goal-contract` by that participant, whose refusal must not tell her the run has ended;
 * - `acp.v1.policies.get`: public to every authenticated participant, refused to the unsigned;
 * - every command subject of intake and the Council with a body over its service's request limit
 *   (the fuzz suite sends some; this sends one to each, unsigned and signed).
 *
 * "Without credentials" is both no header at all and a bare `Conclave-Participant` header naming
 * the victim (or the administrator) with no signature. Each refusal is asserted with its code (and
 * field where one is named), and the state it would have changed is read back unchanged; for the
 * intake and registry paths the event log's last sequence does not move either.
 *
 * Registry: alice (agent, grants on risk and general), bob (agent, grant on risk), mallory (agent,
 * grant on ops), and the council's panel.
 */
describe('security: every command subject refuses the unauthenticated and the wrong participant (authentication required)', () => {
  const h = new SecureConclaveHarness();
  const councilPrefix = `c${h.prefix}`;
  const acp = (pattern: string) => `${h.prefix}.${pattern}`;
  const council = (pattern: string) => `${councilPrefix}.${pattern}`;
  const now = () => new Date().toISOString();
  const pem = (id: string) => h.privateKeyOf(id);
  const proposers = ['sx-builder', 'sx-skeptic', 'sx-operator'];
  const chair = 'sx-chair';
  const members: ScriptedMember[] = [];
  let decisions: CouncilDecisionCollector;

  /** No header at all, and a bare participant header without any signature. */
  const anonymous = (claims: string): Array<Record<string, string> | undefined> => [undefined, { [AUTH_HEADERS.participant]: claims }];

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed([
      {
        participant_id: 'alice',
        grants: [
          { domain: 'risk', domain_authority: 0.9, trust_score: 0.9 },
          { domain: 'general', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      { participant_id: 'bob', grants: [{ domain: 'risk', domain_authority: 0.8, trust_score: 0.8 }] },
      { participant_id: 'mallory', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      ...[...proposers, chair].map((participant_id) => ({ participant_id })),
    ]);
  });

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  const raw = (subject: string, body: unknown, hdrs?: Record<string, string>) => h.rawRequest(subject, body, hdrs);

  /** A request signed by `id` with its own key (Ed25519 headers). */
  const signed = (id: string, subject: string, body: unknown) => h.signedRequest<ApiReply>(id, subject, body);

  const logHead = () => h.logHead();

  /** A participant's record as the administrator reads it (undefined when not registered). */
  async function record(id: string): Promise<Record<string, unknown> | undefined> {
    const r = await signed('admin', acp(REGISTRY_PATTERNS.get), { participant_id: id });
    return r.reply.ok ? (r.reply['participant'] as Record<string, unknown>) : undefined;
  }

  describe('intake: acp.v1.respond and acp.v1.escalate', () => {
    let proposalId: string;

    beforeAll(async () => {
      const alice = await h.clientFor('alice');
      proposalId = (await alice.propose({ domain: 'risk', author: 'alice', payload: { loan: 7 }, quorum: 5, created_at: now() }))
        .proposal_id;
    });

    it("given alice's pending risk proposal, when a response in bob's name and an escalation in alice's name come without credentials, or with only a participant header naming them, then UNAUTHENTICATED each, and the proposal is still pending with no response and no event appended", async () => {
      const head = await logHead();
      const attempts: Array<[string, unknown, Array<Record<string, string> | undefined>]> = [
        [
          'v1.respond',
          {
            schema_version: '1.0',
            proposal_id: proposalId,
            participant_id: 'bob',
            response_type: 'endorse',
            confidence: 0.9,
            reason: null,
          },
          anonymous('bob'),
        ],
        ['v1.escalate', { proposal_id: proposalId, reason: 'let a human decide', requested_by: 'alice' }, anonymous('alice')],
      ];
      for (const [pattern, body, claims] of attempts)
        for (const hdrs of claims) {
          const r = await raw(acp(pattern), body, hdrs);
          expect({ pattern, hdrs, reply: r.reply }).toMatchObject({
            pattern,
            hdrs,
            reply: { ok: false, error: { code: 'UNAUTHENTICATED' } },
          });
          expect(r.reply['proposal']).toBeUndefined();
        }

      const after = await (await h.clientFor('alice')).get(proposalId);
      expect(after).toMatchObject({ status: 'pending', responses: [] });
      expect(await logHead()).toBe(head);
      // The same response signed by bob is recorded: the refusals above were for want of credentials.
      const endorsed = await (await h.clientFor('bob')).endorse(proposalId, { participant_id: 'bob', confidence: 0.9 });
      expect(endorsed.responses.map((r) => r.participant_id)).toEqual(['bob']);
    });
  });

  describe('the registry and the domain policies: every write of acp.v1.participants.* and acp.v1.policies.set', () => {
    const attackerKey = generateParticipantKeys().publicKey;
    const newcomerKey = generateParticipantKeys().publicKey;
    const policy = {
      schema_version: '1.0',
      domain: 'risk',
      version: 1,
      description: "mallory's: nothing passes without her",
      quorum_policies: [{ kind: 'mallory-decides', min_responses: 1, required_participants: ['mallory'] }],
      default_quorum_policy: { kind: 'mallory-decides' },
    };
    /** Each write, aimed at alice (or handing mallory or a newcomer what only an administrator gives). */
    const writes: Array<[string, Record<string, unknown>]> = [
      [REGISTRY_PATTERNS.register, { participant_id: 'sx-newcomer', roles: ['administrator'], public_key: newcomerKey }],
      [REGISTRY_PATTERNS.update, { participant_id: 'alice', roles: ['agent', 'administrator'], clearance: 'restricted' }],
      [REGISTRY_PATTERNS.rotateKey, { participant_id: 'alice', public_key: attackerKey }],
      [REGISTRY_PATTERNS.cancelRotation, { participant_id: 'alice' }],
      [REGISTRY_PATTERNS.revokeKey, { participant_id: 'alice', key_id: 'k1', reason: 'locked out by mallory' }],
      [REGISTRY_PATTERNS.grant, { participant_id: 'mallory', domain: 'risk', domain_authority: 1, trust_score: 1 }],
      [REGISTRY_PATTERNS.revokeGrant, { participant_id: 'alice', domain: 'risk' }],
      [REGISTRY_PATTERNS.deactivate, { participant_id: 'alice', reason: 'gone' }],
      [POLICY_PATTERNS.set, { policy }],
    ];

    /** Nothing any write above would change has changed, and alice's key still signs. */
    async function expectUnchanged(before: { alice: unknown; mallory: unknown; head: number }) {
      expect(await record('alice')).toEqual(before.alice);
      expect(await record('mallory')).toEqual(before.mallory);
      expect(await record('sx-newcomer')).toBeUndefined();
      const risk = await signed('alice', acp(POLICY_PATTERNS.get), { domain: 'risk' });
      expect(risk.reply).toMatchObject({ ok: true, policy: null, governing: null });
      expect(await logHead()).toBe(before.head);
    }

    it('given no credentials, or only a participant header naming the administrator or alice, when each registry write and policies.set is sent, then UNAUTHENTICATED each, no participant or policy in the reply, and nothing changes', async () => {
      const before = { alice: await record('alice'), mallory: await record('mallory'), head: await logHead() };
      expect(before.alice).toMatchObject({ participant_id: 'alice', status: 'active' });

      for (const [pattern, body] of writes)
        for (const hdrs of [...anonymous('admin'), { [AUTH_HEADERS.participant]: 'alice' }]) {
          const r = await raw(acp(pattern), body, hdrs);
          expect({ pattern, hdrs, reply: r.reply }).toMatchObject({
            pattern,
            hdrs,
            reply: { ok: false, error: { code: 'UNAUTHENTICATED' } },
          });
          expect(r.reply['participant'] ?? r.reply['policy']).toBeUndefined();
        }

      await expectUnchanged(before);
    });

    it('given mallory, an agent without the administrator role, when she signs each registry write aimed at alice (or at herself for a grant, or registering a newcomer) and a policy for risk, then FORBIDDEN each, and nothing changes: alice keeps her roles, key, grant and status', async () => {
      const before = { alice: await record('alice'), mallory: await record('mallory'), head: await logHead() };

      for (const [pattern, body] of writes) {
        const r = await signed('mallory', acp(pattern), body);
        expect({ pattern, reply: r.reply }).toMatchObject({ pattern, reply: { ok: false, error: { code: 'FORBIDDEN' } } });
        expect(r.reply['participant'] ?? r.reply['policy']).toBeUndefined();
      }

      await expectUnchanged(before);
      const own = await signed('alice', acp(REGISTRY_PATTERNS.get), { participant_id: 'alice' });
      expect(own.reply).toMatchObject({ ok: true, participant: { participant_id: 'alice', status: 'active' } });
    });

    it("given alice's own key rotation pending its cool-down, when it is cancelled without credentials or by mallory, then UNAUTHENTICATED or FORBIDDEN, and the rotation is still pending; alice cancels it herself", async () => {
      const fresh = generateParticipantKeys().publicKey;
      const requested = await signed('alice', acp(REGISTRY_PATTERNS.rotateKey), { participant_id: 'alice', public_key: fresh });
      expect(requested.reply).toMatchObject({ ok: true, participant: { pending_rotation: expect.any(Object) } });
      const pending = (await record('alice'))?.['pending_rotation'];
      expect(pending).toBeDefined();

      for (const hdrs of anonymous('alice')) {
        const r = await raw(acp(REGISTRY_PATTERNS.cancelRotation), { participant_id: 'alice' }, hdrs);
        expect(r.reply).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
      }
      const byMallory = await signed('mallory', acp(REGISTRY_PATTERNS.cancelRotation), { participant_id: 'alice', reason: 'not hers' });
      expect(byMallory.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
      expect((await record('alice'))?.['pending_rotation']).toEqual(pending);

      const cancelled = await signed('alice', acp(REGISTRY_PATTERNS.cancelRotation), { participant_id: 'alice' });
      expect(cancelled.reply).toMatchObject({ ok: true });
      expect((await record('alice'))?.['pending_rotation']).toBeUndefined();
    });

    it("given the same register and policies.set bodies, when the administrator signs them, then both are recorded: the refusals above were for who sent them, not for what they said; risk's policy document is then read by mallory, who has no grant on risk (policies are public to the authenticated), not by an unsigned caller", async () => {
      expect((await signed('admin', acp(POLICY_PATTERNS.set), { policy })).reply).toMatchObject({ ok: true, policy: { version: 1 } });
      expect((await signed('mallory', acp(POLICY_PATTERNS.get), { domain: 'risk' })).reply).toMatchObject({
        ok: true,
        policy: { domain: 'risk', version: 1 },
      });
      for (const hdrs of anonymous('mallory'))
        expect((await raw(acp(POLICY_PATTERNS.get), { domain: 'risk' }, hdrs)).reply).toMatchObject({
          ok: false,
          error: { code: 'UNAUTHENTICATED' },
        });
      const [, register] = writes[0];
      expect((await signed('admin', acp(REGISTRY_PATTERNS.register), register)).reply).toMatchObject({
        ok: true,
        participant: { participant_id: 'sx-newcomer' },
      });
    });
  });

  describe('council: council.v1.goal-contract and council.v1.frame-decline', () => {
    const goal = scriptedGoalContract({ decision_owner: 'alice' });
    let runId: string;
    let release: () => void;
    const aliceCouncil = () => new CouncilClient(h.nc, councilPrefix, { signer: ed25519Signer('alice', pem('alice')) });

    /** What a revision or a declined challenge would change in the run, as its owner reads it. */
    async function framing() {
      const r = await aliceCouncil().get(runId);
      return {
        revisions: r.goal_contract_revisions,
        frameChecks: r.artifacts.frame_checks,
        terminal: r.terminal,
        refusals: r.refusals,
      };
    }

    beforeAll(async () => {
      decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
      const gate = new Promise<void>((r) => (release = r));
      for (const id of [...proposers, chair])
        members.push(
          new ScriptedMember(
            h.nc,
            id,
            cleanBehaviour({ hold: (t) => (t.stage === 'review' ? gate : undefined) }),
            councilPrefix,
            ed25519Signer(id, pem(id)),
          ).start(),
        );
      runId = await aliceCouncil().start({
        goal_contract: goal,
        panel: scriptedPanel({ proposers, chair }),
        policy: { stage_timeout_ms: 30_000 },
      });
    }, 30_000);

    it("given alice's running council, when a GoalContract revision and a declined frame challenge in her name come without credentials, or with only a participant header naming her, then UNAUTHENTICATED each, and the run's GoalContract and frame checks are unchanged", async () => {
      const before = await framing();
      expect(before.revisions.map((g) => g.goal_contract.goal_contract_id)).toEqual([goal.goal_contract_id]);
      expect(before.terminal).toBeNull();

      for (const hdrs of anonymous('alice')) {
        for (const [pattern, body] of [
          ['v1.goal-contract', { run_id: runId, goal_contract: { ...goal, goal_contract_id: 'gc-anonymous' }, actor: 'alice' }],
          ['v1.frame-decline', { run_id: runId, frame_check_id: 'fc-anonymous', reason: 'no reason', actor: 'alice' }],
        ] as const) {
          const r = await raw(council(pattern), body, hdrs);
          expect({ pattern, hdrs, reply: r.reply }).toMatchObject({
            pattern,
            hdrs,
            reply: { ok: false, error: { code: 'UNAUTHENTICATED' } },
          });
          expect(r.reply['run_id']).toBeUndefined();
        }
      }

      expect(await framing()).toEqual(before);
    });

    it("given alice's running council, when a panel member signs an answer over the council's request limit, or one whose bytes are not UTF-8, then PAYLOAD_TOO_LARGE (not even parsed) or INVALID_JSON, final, and the run is unchanged; the same member's well-formed answer to an unknown task is refused for the task", async () => {
      const before = await framing();
      const member = proposers[0];
      const subject = council(`v1.answers.${member}`);
      const send = (bytes: Uint8Array) => h.rawRequest(subject, bytes, ed25519Signer(member, pem(member))(subject, bytes));
      const limit = Number(h.env['CONCLAVE_COUNCIL_MAX_PAYLOAD_BYTES'] ?? 262_144);
      const oversized = new TextEncoder().encode(
        JSON.stringify({ task_id: `${runId}:r1:proposal:${member}`, content: { position: 'x'.repeat(limit) } }),
      );
      expect((await send(oversized)).reply).toMatchObject({ ok: false, retry: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
      const notUtf8 = Uint8Array.from([...new TextEncoder().encode('{"task_id":"'), 0xff, 0xfe, ...new TextEncoder().encode('"}')]);
      expect((await send(notUtf8)).reply).toMatchObject({ ok: false, retry: false, error: { code: 'INVALID_JSON' } });
      const unknownTask = new TextEncoder().encode(JSON.stringify({ task_id: `${runId}:no-such-task`, content: {} }));
      const control = (await send(unknownTask)).reply;
      expect(control.ok).toBe(false);
      expect(control.error?.code).not.toMatch(/^(PAYLOAD_TOO_LARGE|INVALID_JSON|UNAUTHENTICATED)$/);
      expect(await framing()).toEqual(before);
    });

    it("given alice's running council, when mallory (no role in it) declines a frame challenge as herself or declaring alice, or revises the GoalContract declaring alice, then NOT_AUTHORIZED_ROLE or FORBIDDEN naming actor, nothing of the run changes, and the run decides on alice's GoalContract", async () => {
      const before = await framing();

      const asHerself = await signed('mallory', council('v1.frame-decline'), {
        run_id: runId,
        frame_check_id: 'fc-guess',
        reason: 'the frame is wrong',
      });
      expect(asHerself.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'actor' } });
      const declaringAlice = await signed('mallory', council('v1.frame-decline'), {
        run_id: runId,
        frame_check_id: 'fc-guess',
        reason: 'the frame is wrong',
        actor: 'alice',
      });
      expect(declaringAlice.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'actor' } });
      const revisionAsAlice = await signed('mallory', council('v1.goal-contract'), {
        run_id: runId,
        goal_contract: { ...goal, goal_contract_id: 'gc-mallory', decision_owner: 'alice' },
        actor: 'alice',
      });
      expect(revisionAsAlice.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'actor' } });
      // The owner's decline of the same unknown frame check is refused for the frame check: mallory
      // was refused for her role before the run told her whether such a frame check exists.
      const owners = await signed('alice', council('v1.frame-decline'), { run_id: runId, frame_check_id: 'fc-guess', reason: 'check' });
      expect(owners.reply).toMatchObject({ ok: false, error: { code: 'UNKNOWN_REFERENCE', field: 'frame_check_id' } });

      expect(await framing()).toEqual(before);
      release();
      expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
      const ended = await aliceCouncil().get(runId);
      expect(ended.goal_contract_revisions.map((g) => g.goal_contract.goal_contract_id)).toEqual([goal.goal_contract_id]);
      expect(ended.terminal?.reason).not.toBe('human-interrupt');
    }, 40_000);

    it("given alice's decided council, when mallory (no role in it) interrupts it, declines a frame challenge or revises its GoalContract, then NOT_AUTHORIZED_ROLE naming actor, as mid-run: the refusal does not tell her the run has ended; alice is told it has", async () => {
      const before = await aliceCouncil().get(runId);
      expect(before.terminal?.terminal_state).toMatch(/^decided/);
      const commands = [
        ['v1.interrupt', { run_id: runId, reason: 'stop' }],
        ['v1.frame-decline', { run_id: runId, frame_check_id: 'fc-guess', reason: 'the frame is wrong' }],
        ['v1.goal-contract', { run_id: runId, goal_contract: { ...goal, goal_contract_id: 'gc-late' } }],
      ] as const;
      for (const [pattern, body] of commands) {
        const r = await signed('mallory', council(pattern), body);
        expect({ pattern, reply: r.reply }).toMatchObject({
          pattern,
          reply: { ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'actor' } },
        });
        expect(r.text).not.toMatch(/terminated|decided/);
      }
      for (const [pattern, body] of commands) {
        const r = await signed('alice', council(pattern), body);
        expect({ pattern, reply: r.reply }).toMatchObject({ pattern, reply: { ok: false, error: { code: 'INVALID_STATE' } } });
      }
      const after = await aliceCouncil().get(runId);
      expect(after.terminal).toEqual(before.terminal);
      expect(after.goal_contract_revisions).toEqual(before.goal_contract_revisions);
    });
  });

  it("given every command subject of intake and the council, when a body over its service's request limit comes unsigned, with a bare participant header, or signed by a registered participant, then PAYLOAD_TOO_LARGE, not UNAUTHENTICATED or FORBIDDEN: the size is checked first, and nothing is appended", async () => {
    // Given each subject with its service's limit (acp.v1.resolve is the escalation service's, not started here)
    const intakeLimit = Number(h.env['CONCLAVE_MAX_PAYLOAD_BYTES'] ?? 65_536);
    const councilLimit = Number(h.env['CONCLAVE_COUNCIL_MAX_PAYLOAD_BYTES'] ?? 262_144);
    const subjects: Array<[string, number]> = [
      ...Object.entries(ACP_COMMANDS)
        .filter(([name]) => name !== 'resolve')
        .map(([, pattern]): [string, number] => [acp(pattern), intakeLimit]),
      ...[...Object.values(REGISTRY_PATTERNS), ...Object.values(POLICY_PATTERNS)].map((pattern): [string, number] => [
        acp(pattern),
        intakeLimit,
      ]),
      ...Object.values(COUNCIL_COMMANDS).map((pattern): [string, number] => [council(pattern), councilLimit]),
    ];
    const before = await h.logHead();
    for (const [subject, limit] of subjects) {
      // A well-formed object one byte over the limit: only its size is wrong.
      const filler = 'x'.repeat(limit);
      const body = { proposal_id: '01JBQ5Z8N8D7Q6W0X4V3T2S1R0', note: filler };
      // When it comes unsigned, with a bare header naming alice, and signed by mallory
      const replies = [
        ...(await Promise.all(anonymous('alice').map((hdrs) => raw(subject, body, hdrs)))).map((r) => r.reply),
        (await signed('mallory', subject, body)).reply,
      ];
      // Then each is refused for its size alone
      for (const reply of replies)
        expect({ subject, reply }).toMatchObject({ subject, reply: { ok: false, error: { code: 'PAYLOAD_TOO_LARGE' } } });
    }
    // And the event log did not move
    expect(await h.logHead()).toBe(before);
  }, 60_000);
});
