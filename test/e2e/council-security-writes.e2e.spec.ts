import { createHash } from 'node:crypto';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS, verifyChain } from '@conclave/registry-protocol';
import { ed25519Signer } from '@conclave/sdk';
import { sha256Hex } from '@conclave/service-kit';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { headers as natsHeaders } from 'nats';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Reply {
  ok: boolean;
  error?: { code: string; field?: string; message?: string };
  [key: string]: unknown;
}

/**
 * The Council's write paths and run reads attacked with CONCLAVE_AUTH_MODE=required: starting a
 * council in a domain without a grant (on `council.v1.start`, in `general` when the GoalContract
 * names no domain, and through an ACP proposal in a domain it may propose in whose GoalContract
 * names another), with a panel the registry does not know or a deactivated member, a decision
 * owner sitting on its own
 * panel reading rivals' candidates mid-run, and a refused Council command missing from the audit
 * chain. Each attack is refused with its typed code, and nothing changed: no run, no task queued,
 * nothing disclosed in the reply.
 *
 * Registry: alice (grant on risk), mallory (grant on ops only), and one panel per test, each
 * registered; `ghost` is not; `dea-chair` is deactivated by its test.
 */
describe('Council security: who may start a council, who reads it mid-run, and every refusal audited (authentication required, over NATS)', () => {
  const h = new SecureConclaveHarness();
  const prefix = `c${h.prefix}`;
  const council = (pattern: string) => `${prefix}.${pattern}`;
  const members: ScriptedMember[] = [];
  let decisions: CouncilDecisionCollector;

  const panelOf = (tag: string) => ({ proposers: ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`), chair: `${tag}-chair` });
  const idsOf = (p: { proposers: string[]; chair: string }) => [...p.proposers, p.chair];
  const attackPanel = panelOf('atk');
  const ownerPanel = { proposers: ['alice', 'ow-skeptic', 'ow-operator'], chair: 'ow-chair' };
  const pem = (id: string) => h.privateKeyOf(id);
  const goal = (owner: string, domain: string, id = 'gc-001') =>
    scriptedGoalContract({ goal_contract_id: id, decision_owner: owner, domain });

  beforeAll(async () => {
    await h.start('intake', 'audit', 'council');
    await h.seed([
      { participant_id: 'alice', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'bob', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      ...[
        ...idsOf(attackPanel),
        ...idsOf(panelOf('legit')),
        ...idsOf(panelOf('int')),
        ...idsOf(panelOf('fa')),
        ...idsOf(panelOf('again')),
        ...idsOf(panelOf('acpx')),
        ...idsOf(panelOf('dea')),
        ...idsOf(ownerPanel).slice(1),
      ].map((participant_id) => ({ participant_id })),
    ]);
    decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
  });

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  /** A request signed by `id`: the reply as parsed and as sent, and the body's hash (as audited). */
  const signed = (id: string, subject: string, body: unknown) => h.signedRequest<Reply>(id, subject, body);

  /** Seats panel members who sign their answers; their reviews wait for `gate` when one is given. */
  function seat(ids: string[], gate?: Promise<void>, reviewing?: () => void) {
    for (const id of ids)
      members.push(
        new ScriptedMember(
          h.nc,
          id,
          cleanBehaviour({ hold: (t) => (gate && t.stage === 'review' ? (reviewing?.(), gate) : undefined) }),
          prefix,
          ed25519Signer(id, pem(id)),
        ).start(),
      );
  }

  /** Tasks queued for these members on the COUNCIL_TASKS stream (nobody consumes the attack panel's queues). */
  async function queuedFor(ids: string[]): Promise<number> {
    const jsm = await h.nc.jetstreamManager();
    const info = await jsm.streams.info(acpStreamNames(h.run).councilTasks, { subjects_filter: `${prefix}.v1.tasks.>` });
    const subjects = (info.state.subjects ?? {}) as Record<string, number>;
    return ids.reduce((n, id) => n + (subjects[`${prefix}.v1.tasks.${id}`] ?? 0), 0);
  }

  /** `council.v1.start` signed by `actor`: a run of `panel` on `contract` (the actor's own, in risk, by default). */
  const startRun = (
    actor: string,
    runId: string,
    panel: { proposers: string[]; chair: string },
    contract: unknown = goal(actor, 'risk'),
    stageTimeoutMs = 10_000,
  ) =>
    signed(actor, council('v1.start'), {
      run_id: runId,
      goal_contract: contract,
      panel: scriptedPanel(panel),
      policy: { stage_timeout_ms: stageTimeoutMs },
    });

  /**
   * Alice's council in risk, held mid-run: its members seated, their reviews waiting until
   * `release()`; `reviewsIssued` resolves once the first review task reached a member.
   */
  async function heldRun(tag: string, panel: { proposers: string[]; chair: string }) {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reviewing!: () => void;
    const reviewsIssued = new Promise<void>((r) => (reviewing = r));
    seat(idsOf(panel), gate, reviewing);
    const runId = `${tag}_${h.run}`;
    const start = await startRun('alice', runId, panel, goal('alice', 'risk'), 20_000);
    expect(start.reply).toMatchObject({ ok: true, run_id: runId });
    return { runId, release, reviewsIssued };
  }

  async function expectNoRun(runId: string, reader: string) {
    const get = await signed(reader, council('v1.get'), { run_id: runId });
    expect(get.reply).toMatchObject({ ok: false, error: { code: 'RUN_NOT_FOUND' } });
  }

  it('given mallory with a grant on ops only, when she starts a council in domain risk, then FORBIDDEN naming goal_contract.domain, audited, no run and no task queued; alice, granted on risk, starts the same council', async () => {
    const runId = `atk_${h.run}`;
    const start = await startRun('mallory', runId, attackPanel);
    expect(start.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'goal_contract.domain' } });
    expect(start.reply['run_id']).toBeUndefined();
    await expectNoRun(runId, 'mallory');
    expect(await queuedFor(idsOf(attackPanel))).toBe(0);
    await eventually(
      async () => {
        const found = await h.auditEntries({ actor: 'mallory', action: 'rejected:council.start' });
        return found.some((e) => e.error?.code === 'FORBIDDEN') ? found : undefined;
      },
      10_000,
      'the refused start audited',
    );

    const legit = panelOf('legit');
    seat(idsOf(legit));
    const ok = await startRun('alice', `legit_${h.run}`, legit);
    expect(ok.reply).toMatchObject({ ok: true, run_id: `legit_${h.run}` });
    expect((await decisions.waitFor(`legit_${h.run}`)).terminal_state).toMatch(/^decided/);
  }, 40_000);

  it("given alice's started council, when the same start is sent again, then ok (a retry); when alice sends another contract, or bob his own, under the same run_id, then RUN_ALREADY_STARTED and the run stays alice's first", async () => {
    const runId = `again_${h.run}`;
    const panel = panelOf('again');
    seat(idsOf(panel));
    expect((await startRun('alice', runId, panel, goal('alice', 'risk', 'gc-first'))).reply).toMatchObject({ ok: true, run_id: runId });
    expect((await startRun('alice', runId, panel, goal('alice', 'risk', 'gc-first'))).reply).toMatchObject({ ok: true, run_id: runId });
    for (const [actor, contract] of [
      ['alice', { ...goal('alice', 'risk', 'gc-other'), question: 'Another question?' }],
      ['bob', goal('bob', 'risk', 'gc-bob')],
    ] as const) {
      const again = await startRun(actor, runId, panel, contract);
      expect(again.reply).toMatchObject({ ok: false, error: { code: 'RUN_ALREADY_STARTED', field: 'run_id' } });
    }
    expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const record = (await signed('alice', council('v1.get'), { run_id: runId })).reply['run_record'] as {
      goal_contract_revisions: { goal_contract: { goal_contract_id: string } }[];
    };
    expect(record.goal_contract_revisions.map((r) => r.goal_contract.goal_contract_id)).toEqual(['gc-first']);
  }, 40_000);

  it("given alice's council started from her ACP proposal, when she sends its GoalContract, panel and policy again on council.v1.start under its run_id, without the ACP origin, then RUN_ALREADY_STARTED, and the run keeps its origin", async () => {
    const panel = panelOf('acpx');
    seat(idsOf(panel));
    const contract = goal('alice', 'risk', 'gc-acpx');
    const policy = { stage_timeout_ms: 10_000 };
    const { proposal, run_id: runId } = await (
      await h.clientFor('alice')
    ).requestDeliberation({
      domain: 'risk',
      author: 'alice',
      quorum: 2,
      goal_contract: { ...contract },
      panel: scriptedPanel(panel),
      policy,
    });
    const origin = (reply: Reply) => (reply['run_record'] as { acp_origin?: { proposal_id: string } } | undefined)?.acp_origin;
    await eventually(
      async () => (origin((await signed('alice', council('v1.get'), { run_id: runId })).reply) ? true : undefined),
      15_000,
      'the run her proposal asked for',
    );

    // The same actor, GoalContract, panel and policy, with no ACP origin.
    const again = await startRun('alice', runId, panel, contract, policy.stage_timeout_ms);
    expect(again.reply).toMatchObject({ ok: false, error: { code: 'RUN_ALREADY_STARTED', field: 'run_id' } });

    expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const read = await signed('alice', council('v1.get'), { run_id: runId });
    expect(origin(read.reply)).toMatchObject({ proposal_id: proposal.proposal_id, author: 'alice', domain: 'risk' });
    const record = read.reply['run_record'] as { goal_contract_revisions: { goal_contract: { goal_contract_id: string } }[] };
    expect(record.goal_contract_revisions.map((r) => r.goal_contract.goal_contract_id)).toEqual(['gc-acpx']);
  }, 40_000);

  it('given a panel naming a participant the registry does not know, when alice starts her council, then UNKNOWN_REFERENCE naming panel, and no run and no task for anyone', async () => {
    const runId = `ghost_${h.run}`;
    const panel = { proposers: ['atk-builder', 'atk-skeptic', 'ghost'], chair: 'atk-chair' };
    const start = await startRun('alice', runId, panel);
    expect(start.reply).toMatchObject({ ok: false, error: { code: 'UNKNOWN_REFERENCE', field: 'panel' } });
    expect(start.reply.error?.message).toContain('ghost');
    await expectNoRun(runId, 'alice');
    expect(await queuedFor(idsOf(panel))).toBe(0);
  });

  it('given a GoalContract that names no domain, when alice (grant on risk only, none on general) starts her council, then FORBIDDEN naming goal_contract.domain: the run would be in general; no run and no task queued', async () => {
    const runId = `nodomain_${h.run}`;
    // `domain: undefined` is dropped by JSON.stringify: the contract names no domain.
    const start = await startRun('alice', runId, attackPanel, { ...goal('alice', 'risk', 'gc-nodomain'), domain: undefined });
    expect(start.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'goal_contract.domain' } });
    expect(start.reply.error?.message).toContain('no grant for domain general');
    await expectNoRun(runId, 'alice');
    expect(await queuedFor(idsOf(attackPanel))).toBe(0);
  });

  it('given a panel naming a deactivated participant, when alice starts her council, then UNKNOWN_REFERENCE naming panel, and no run and no task for anyone', async () => {
    const panel = panelOf('dea');
    await h.admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: 'dea-chair', reason: 'left the panel' });
    const runId = `dea_${h.run}`;
    const start = await startRun('alice', runId, panel);
    expect(start.reply).toMatchObject({ ok: false, error: { code: 'UNKNOWN_REFERENCE', field: 'panel' } });
    expect(start.reply.error?.message).toContain('dea-chair (deactivated)');
    await expectNoRun(runId, 'alice');
    expect(await queuedFor(idsOf(panel))).toBe(0);
  });

  it("given mallory's ACP proposal in ops asking for a council whose GoalContract names domain risk, when the council service reacts, then the start is refused NOT_AUTHORIZED_ROLE at goal_contract.domain in her name on the audit chain, and no run and no task exist", async () => {
    const mallory = await h.clientFor('mallory');
    const { proposal, run_id: runId } = await mallory.requestDeliberation({
      domain: 'ops',
      author: 'mallory',
      quorum: 2,
      goal_contract: { ...goal('mallory', 'risk', 'gc-acp') },
      panel: scriptedPanel(attackPanel),
      policy: { stage_timeout_ms: 10_000 },
    });
    const refused = await eventually(
      async () => {
        const found = await h.auditEntries({ proposal_id: proposal.proposal_id, action: 'rejected:council.acp.start-run' });
        return found.length > 0 ? found : undefined;
      },
      15_000,
      'the refused deliberation request audited',
    );
    expect(refused).toEqual([
      expect.objectContaining({
        actor: 'mallory',
        outcome: 'rejected',
        authenticated: true,
        error: expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.domain' }),
      }),
    ]);
    await expectNoRun(runId, 'mallory');
    expect(await queuedFor(idsOf(attackPanel))).toBe(0);
  }, 30_000);

  it("given alice, the decision owner, sitting on her own council's panel, when she reads the run mid-run, then NOT_AUTHORIZED_ROLE and no candidate or author id in the reply; once it ended she reads the owner's copy with the mapping", async () => {
    const { runId, release, reviewsIssued } = await heldRun('owner', ownerPanel);
    // The proposals are in: every candidate, with its author, is in the log.
    await reviewsIssued;

    const read = await signed('alice', council('v1.get'), { run_id: runId });
    expect(read.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'run_id' } });
    expect(read.reply['run_record']).toBeUndefined();
    for (const secret of ['ow-skeptic', 'ow-operator', 'Migrate in two phases']) expect(read.text).not.toContain(secret);

    release();
    expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const ended = await signed('alice', council('v1.get'), { run_id: runId });
    const record = ended.reply['run_record'] as { anonymization: { mapping: unknown[] } };
    expect(record.anonymization.mapping).toHaveLength(3);
  }, 40_000);

  it("given alice's running council, when mallory interrupts it, reads it or records a structured outcome of it, then each is refused with its Council code, the run goes on to its decision, and the audit chain holds each refusal with her as the actor; once decided, her outcome of it is refused for her role", async () => {
    const { runId, release } = await heldRun('int', panelOf('int'));

    const interrupt = await signed('mallory', council('v1.interrupt'), { run_id: runId, reason: 'stop', actor: 'mallory' });
    expect(interrupt.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'actor' } });
    // Her interrupt's entry, matched by the hash of the body she sent, and that entry on the chain.
    const audited = await eventually(
      async () => (await h.auditEntries({ action: 'rejected:council.interrupt' })).find((e) => e.payload_hash === interrupt.hash),
      10_000,
      'the refused interrupt audited',
    );
    expect(audited).toMatchObject({
      actor: 'mallory',
      outcome: 'rejected',
      authenticated: true,
      error: { code: 'NOT_AUTHORIZED_ROLE', field: 'actor' },
    });
    const chain = await h.auditEntries({});
    expect(chain.filter((e) => e.payload_hash === interrupt.hash)).toEqual([audited]);
    expect(chain[audited.seq - 1]).toEqual(audited);
    expect(verifyChain(chain.slice(0, audited.seq), sha256Hex)).toEqual({ ok: true, entries: audited.seq, head: audited.hash });

    // A read (council.controller) and a structured outcome (evaluation.controller) refused by the run: audited the same way.
    const read = await signed('mallory', council('v1.get'), { run_id: runId });
    expect(read.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE' } });
    // Mid-run: refused for her role first, so the refusal tells her nothing of the run's state.
    const outcome = await signed('mallory', council('v1.outcome.record'), { run_id: runId, outcome: { outcome_id: 'o-mallory' } });
    expect(outcome.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'recorded_by' } });
    for (const [action, refused] of [
      ['rejected:council.get', read],
      ['rejected:council.outcome.record', outcome],
    ] as const) {
      const entry = await eventually(
        async () => (await h.auditEntries({ actor: 'mallory', action })).find((e) => e.payload_hash === refused.hash),
        10_000,
        `${action} audited`,
      );
      expect(entry).toMatchObject({ outcome: 'rejected', authenticated: true, error: { code: refused.reply.error?.code } });
    }

    release();
    const decided = await decisions.waitFor(runId);
    expect(decided.terminal_state).toMatch(/^decided/);
    const record = (await signed('alice', council('v1.get'), { run_id: runId })).reply['run_record'] as {
      terminal: { reason: string };
      decision_record: { decision_id: string };
    };
    expect(record.terminal.reason).not.toBe('human-interrupt');

    // Once decided, an outcome naming a wrong decision id by mallory: refused for her role, and the real id not disclosed; audited.
    const decided_outcome = await signed('mallory', council('v1.outcome.record'), {
      run_id: runId,
      outcome: { outcome_id: 'o-mallory-2', decision_id: 'decision-guess', observed_at: new Date().toISOString() },
    });
    expect(decided_outcome.reply).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'recorded_by' } });
    expect(decided_outcome.text).not.toContain(record.decision_record.decision_id);
    const entry = await eventually(
      async () =>
        (await h.auditEntries({ actor: 'mallory', action: 'rejected:council.outcome.record' })).find(
          (e) => e.payload_hash === decided_outcome.hash,
        ),
      10_000,
      'the refused outcome of the decided run audited',
    );
    expect(entry).toMatchObject({ outcome: 'rejected', authenticated: true, error: { code: 'NOT_AUTHORIZED_ROLE' } });
  }, 60_000);

  it("given alice's running council, when mallory answers fa-builder's task unsigned, signed as herself, or with fa-builder's name and her own key, then each is refused, the run goes on to its decision, and the audit chain holds each refusal", async () => {
    const { runId, release } = await heldRun('fa', panelOf('fa'));

    const subject = council('v1.answers.fa-builder');
    const answer = async (tag: string, signer?: ReturnType<typeof ed25519Signer>) => {
      const bytes = encoder.encode(JSON.stringify({ run_id: runId, task_id: `task-${tag}`, ok: true, artifact: { position: tag } }));
      const headers = natsHeaders();
      for (const [k, v] of Object.entries(signer ? signer(subject, bytes) : {})) headers.set(k, v);
      const m = await h.nc.request(subject, bytes, { timeout: 15_000, headers });
      return { verdict: JSON.parse(decoder.decode(m.data)) as Reply, hash: createHash('sha256').update(bytes).digest('hex') };
    };
    const attempts = [
      { ...(await answer('unsigned')), code: 'UNAUTHENTICATED', actor: 'anonymous', authenticated: false },
      {
        ...(await answer('as-mallory', ed25519Signer('mallory', pem('mallory')))),
        code: 'FORBIDDEN',
        actor: 'mallory',
        authenticated: true,
      },
      {
        ...(await answer('forged', ed25519Signer('fa-builder', pem('mallory')))),
        code: 'UNAUTHENTICATED',
        actor: 'fa-builder',
        authenticated: false,
      },
    ];
    for (const a of attempts) {
      expect(a.verdict).toMatchObject({ ok: false, error: { code: a.code } });
      const entry = await eventually(
        async () => (await h.auditEntries({ action: 'rejected:council.answers' })).find((e) => e.payload_hash === a.hash),
        10_000,
        `the refused answer (${a.code}, as ${a.actor}) audited`,
      );
      expect(entry).toMatchObject({ actor: a.actor, outcome: 'rejected', authenticated: a.authenticated, error: { code: a.code } });
    }

    release();
    expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const record = (await signed('alice', council('v1.get'), { run_id: runId })).reply['run_record'] as { refusals: unknown[] };
    expect(record.refusals).toEqual([]);
  }, 40_000);
});
