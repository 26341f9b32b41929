import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, CouncilClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import {
  ScriptedBehaviour,
  ScriptedMember,
  scriptedDescriptor,
  scriptedGoalContract,
  scriptedPanel,
  valueConflictBehaviour,
} from '@conclave/sdk/testing';
import { headers as natsHeaders } from 'nats';
import { loadConfig } from '@conclave/service-kit';
import { AcpReactions } from '../../apps/council/src/app/acp-reactions';
import { startCouncil } from '../../apps/council/src/app/council.app';
import { CouncilConfig } from '../../apps/council/src/app/council.config';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';
import { DecisionCollector } from '../support/decisions';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const DOMAIN = 'billing';
const SERVICE = 'council-service';
// Tokens name registered participants and are 32 characters or more.
const ALICE_TOKEN = 'alice-owner-token-0123456789abcdefghij';
const BOB_TOKEN = 'bob-resolver-token-0123456789abcdefghi';
const grant = (actions: string[], domain = DOMAIN) => ({ domain, domain_authority: 0.9, trust_score: 0.9, actions });

/**
 * The bridge between Council and ACP with authentication required (CONCLAVE_AUTH_MODE=required),
 * as the compose stack and Kubernetes run it. The council service posts to ACP as its own
 * registered participant, signing with its own key; the decision owner's signed command, or the
 * owner's signed ACP proposal asking for deliberation, is what authorises a post. Written as the
 * attacker where it matters: nobody else gets a run's decision posted, and an unsigned or forged
 * post in the service's name is refused by ACP intake.
 */
describe('council ↔ ACP bridge with authentication required (signed, over NATS)', () => {
  const serviceKeys = generateParticipantKeys();
  const keyDir = mkdtempSync(join(tmpdir(), 'council-bridge-'));
  const keyFile = join(keyDir, 'council-service.pem');
  writeFileSync(keyFile, serviceKeys.privateKeyPem, { mode: 0o600 });
  const h = new SecureConclaveHarness({
    CONCLAVE_COUNCIL_PARTICIPANT: SERVICE,
    CONCLAVE_COUNCIL_KEY_FILE: keyFile,
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({ [ALICE_TOKEN]: 'alice', [BOB_TOKEN]: 'bob' }),
  });
  const prefix = `c${h.prefix}`;
  const tags = ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9', 's10', 's11', 's12'];
  const members: ScriptedMember[] = [];
  let councilDecisions: CouncilDecisionCollector;
  let decisions: DecisionCollector;
  let alice: ConclaveClient;
  let escalationUrl: string;

  const pem = (id: string) => h.privateKeyOf(id);
  const panelOf = (tag: string) => ({ proposers: ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`), chair: `${tag}-chair` });
  const owners = { alice: () => new CouncilClient(h.nc, prefix, { signer: ed25519Signer('alice', pem('alice')), timeoutMs: 15_000 }) };
  const council = () => h.instances.find((i) => i.name === 'council')!.app as INestApplication;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation', 'audit', 'council');
    // The council service is a participant like any other: its own key, its own grant.
    await h.admin.call(REGISTRY_PATTERNS.register, { participant_id: SERVICE, roles: ['agent'], public_key: serviceKeys.publicKey });
    await h.admin.call(REGISTRY_PATTERNS.grant, { participant_id: SERVICE, ...grant(['propose', 'escalate']) });
    await h.seed([
      { participant_id: 'alice', roles: ['agent', 'human-resolver'], grants: [grant(['propose', 'escalate', 'resolve'])] },
      { participant_id: 'bob', roles: ['human-resolver'], grants: [grant(['resolve'])] },
      { participant_id: 'carol', grants: [grant(['propose', 'escalate'], 'ops')] },
      { participant_id: 'mallory', grants: [grant(['propose', 'respond'])] },
      { participant_id: 'dave', grants: [grant(['propose', 'escalate'])] },
      { participant_id: 'erin', grants: [grant(['propose', 'escalate'])] },
      { participant_id: 'agent-ops-1', grants: [grant(['respond'])] },
      { participant_id: 'agent-ops-2', grants: [grant(['respond'])] },
      ...tags.flatMap((t) => [...panelOf(t).proposers, panelOf(t).chair]).map((participant_id) => ({ participant_id })),
    ]);
    alice = await h.clientFor('alice');
    councilDecisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
    decisions = new DecisionCollector(h.client);
    const escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    escalationUrl = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await councilDecisions.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
    rmSync(keyDir, { recursive: true, force: true });
  });

  /** The refusals audited under `filter` (an action, with a proposal or an actor), once there is at least one. */
  const auditedRefusals = (filter: { action: string; proposal_id?: string; actor?: string }, what: string) =>
    eventually(
      async () => {
        const found = await h.auditEntries(filter);
        return found.length > 0 ? found : undefined;
      },
      15_000,
      what,
    );

  /** The members of panel `tag`, each signing its answers. */
  function seat(tag: string, behaviour: ScriptedBehaviour = { score: () => 3 }) {
    const { proposers, chair } = panelOf(tag);
    for (const id of [...proposers, chair])
      members.push(new ScriptedMember(h.nc, id, behaviour, prefix, ed25519Signer(id, pem(id))).start());
    return scriptedPanel({ proposers, chair });
  }

  /** A run of `owner` in `domain`, decided by panel `tag`. */
  async function run(tag: string, owner: string, domain: string, behaviour?: ScriptedBehaviour): Promise<string> {
    const client = new CouncilClient(h.nc, prefix, { signer: ed25519Signer(owner, pem(owner)), timeoutMs: 15_000 });
    const runId = await client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${tag}`, decision_owner: owner, domain }),
      panel: seat(tag, behaviour),
      policy: { stage_timeout_ms: 10_000 },
      run_id: `signed_${tag}_${h.run}`,
    });
    await councilDecisions.waitFor(runId);
    return runId;
  }

  /** `council.v1.acp.propose`, signed by `signer` (unsigned when undefined). */
  async function bridge(signer: string | undefined, body: Record<string, unknown>): Promise<Record<string, any>> {
    const subject = `${prefix}.v1.acp.propose`;
    const bytes = encoder.encode(JSON.stringify(body));
    const extra = signer ? ed25519Signer(signer, pem(signer))(subject, bytes) : undefined;
    const hs = extra ? natsHeaders() : undefined;
    if (hs && extra) for (const [k, v] of Object.entries(extra)) hs.set(k, v);
    const msg = await h.nc.request(subject, bytes, { timeout: 15_000, headers: hs });
    return JSON.parse(decoder.decode(msg.data)) as Record<string, any>;
  }

  /** The ACP entries of the domain that carry a run's decision (what the bridge would have posted). */
  async function entriesOf(runId: string) {
    const { proposals } = await alice.list({ domain: DOMAIN, limit: 500 });
    return proposals.filter((p) => (p.payload as { council?: { run_id?: string } }).council?.run_id === runId);
  }

  async function valueChoiceOf(runId: string) {
    return (await owners.alice().get(runId)).value_choice;
  }

  it('the owner’s signed command: the council service posts as itself, ACP records it as the author, the fleet votes', async () => {
    const runId = await run('s1', 'alice', DOMAIN);
    const bridged = await bridge('alice', { run_id: runId, quorum: 2 });
    expect(bridged).toMatchObject({ ok: true, author: SERVICE, domain: DOMAIN, status: 'pending', escalated: false });
    const proposal = await alice.get(bridged['proposal_id']);
    expect(proposal).toMatchObject({ author: SERVICE, caused_by: [bridged['observation_id']] });
    expect(proposal.payload).toMatchObject({
      kind: 'council-decision',
      council: { run_id: runId, decision_owner: 'alice', requested_by: 'alice' },
    });
    expect(await alice.get(bridged['observation_id'])).toMatchObject({ author: SERVICE, type: 'observation', status: 'resolved' });
    expect((await owners.alice().get(runId)).acp_bridge).toMatchObject({ requested_by: 'alice', author: SERVICE });

    for (const voter of ['agent-ops-1', 'agent-ops-2'])
      await (await h.clientFor(voter)).endorse(bridged['proposal_id'], { participant_id: voter, confidence: 0.9 });
    const [d] = await decisions.waitFor(bridged['proposal_id']);
    expect(d).toMatchObject({ outcome: 'approved', domain: DOMAIN });
  });

  it('as an attacker: unsigned, impersonating, not the owner, or an owner without the grant: nothing is posted', async () => {
    const runId = await run('s2', 'alice', DOMAIN);
    expect(await bridge(undefined, { run_id: runId, quorum: 2, actor: 'alice' })).toMatchObject({
      ok: false,
      error: { code: 'UNAUTHENTICATED' },
    });
    expect(await bridge('mallory', { run_id: runId, quorum: 2, actor: 'alice' })).toMatchObject({
      ok: false,
      error: { code: 'FORBIDDEN', field: 'actor' },
    });
    expect(await bridge('mallory', { run_id: runId, quorum: 2 })).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE' } });
    // Carol may not propose in billing: she cannot start a council there (RFC 14.2), so there is nothing to post.
    await expect(run('s3', 'carol', DOMAIN)).rejects.toMatchObject({ code: 'FORBIDDEN', field: 'goal_contract.domain' });
    expect(await bridge('carol', { run_id: `signed_s3_${h.run}`, quorum: 2 })).toMatchObject({
      ok: false,
      error: { code: 'RUN_NOT_FOUND' },
    });
    expect(await entriesOf(runId)).toEqual([]);
  });

  it('as an attacker: dave, whose grant in billing an administrator revokes after his run started, asks for its decision in ACP: refused FORBIDDEN at domain, and nothing reaches ACP', async () => {
    // Given dave, granted propose in billing, whose run there started and decided.
    const runId = await run('s11', 'dave', DOMAIN);
    // When an administrator revokes his grant in billing, then he, correctly signed, asks for the decision in ACP.
    await h.admin.call(REGISTRY_PATTERNS.revokeGrant, { participant_id: 'dave', domain: DOMAIN });
    const { participant } = await h.admin.call<{ participant: { grants: Record<string, unknown> } }>(REGISTRY_PATTERNS.get, {
      participant_id: 'dave',
    });
    expect(participant.grants[DOMAIN]).toBeUndefined();
    // Then the bridge refuses him at the domain (the council service itself may post there), and nothing reaches ACP.
    expect(await bridge('dave', { run_id: runId, quorum: 2 })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'domain' } });
    expect(await entriesOf(runId)).toEqual([]);
    const dave = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('dave', pem('dave')), timeoutMs: 15_000 });
    expect((await dave.get(runId)).acp_bridge).toBeUndefined();
    // And the refusal is on the audit chain, once, in his name, authenticated.
    const refused = await auditedRefusals({ actor: 'dave', action: 'rejected:council.acp.propose' }, 'the refused post audited');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ outcome: 'rejected', authenticated: true, error: { code: 'FORBIDDEN', field: 'domain' } });
  });

  it('as an attacker: erin, whose run ended on a value choice and whose escalate grant in billing an administrator withdraws (propose kept), asks for its decision in ACP: refused FORBIDDEN at domain, and nothing reaches ACP', async () => {
    // Given erin, granted propose and escalate in billing, whose run there ended needing a human value choice.
    const erin = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('erin', pem('erin')), timeoutMs: 15_000 });
    const runId = await run('s12', 'erin', DOMAIN, valueConflictBehaviour());
    expect((await erin.get(runId)).terminal?.terminal_state).toBe('needs-human-value-choice');
    // When an administrator grants her propose only in billing, then she, correctly signed, asks for the decision in ACP
    // (which would escalate it to a human: that needs escalate).
    await h.admin.call(REGISTRY_PATTERNS.grant, { participant_id: 'erin', ...grant(['propose']) });
    const { participant } = await h.admin.call<{ participant: { grants: Record<string, { actions: string[] }> } }>(REGISTRY_PATTERNS.get, {
      participant_id: 'erin',
    });
    expect(participant.grants[DOMAIN].actions).toEqual(['propose']);
    // Then the bridge refuses her at the domain (the council service itself may escalate there), and nothing reaches ACP.
    expect(await bridge('erin', { run_id: runId, quorum: 3 })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'domain' } });
    expect(await entriesOf(runId)).toEqual([]);
    expect((await erin.get(runId)).acp_bridge).toBeUndefined();
    // And the refusal is on the audit chain, once, in her name, authenticated.
    const refused = await auditedRefusals({ actor: 'erin', action: 'rejected:council.acp.propose' }, 'the refused post audited');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ outcome: 'rejected', authenticated: true, error: { code: 'FORBIDDEN', field: 'domain' } });
  });

  it('as an attacker posting to ACP in the council service’s name: unsigned, signed by another, or with a forged key, intake refuses', async () => {
    const entry = {
      domain: DOMAIN,
      author: SERVICE,
      quorum: 1,
      payload: { kind: 'council-decision', council: { run_id: 'forged', requested_by: 'alice' }, decision: 'wire the money' },
    };
    await expect(h.client.propose(entry)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect((await h.clientFor('mallory')).propose(entry)).rejects.toMatchObject({ code: 'FORBIDDEN', field: 'author' });
    const forged = await h.clientFor(SERVICE, pem('mallory'));
    await expect(forged.propose(entry)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await entriesOf('forged')).toEqual([]);
  });

  it('value choice → escalation → the owner resolves over HTTP → the run resumes; another resolver’s resolution does not', async () => {
    // Run A: bob, a human resolver of billing but not the owner, resolves its escalation.
    const runA = await run('s4', 'alice', DOMAIN, valueConflictBehaviour());
    const a = await bridge('alice', { run_id: runA, quorum: 3 });
    expect(a).toMatchObject({ ok: true, status: 'escalated', escalated: true });
    await (await h.clientFor('bob')).resolve(a['proposal_id'], { outcome: 'approved', resolved_by: 'bob', note: 'speed' });
    await decisions.waitFor(a['proposal_id'], 2);

    // Run B: alice, its owner, resolves over the escalation service's HTTP API with her token.
    const runB = await run('s5', 'alice', DOMAIN, valueConflictBehaviour());
    const b = await bridge('alice', { run_id: runB, quorum: 3 });
    expect(b).toMatchObject({ ok: true, status: 'escalated', escalated: true });
    const res = await fetch(`${escalationUrl}/escalations/${b['proposal_id']}/resolve`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ALICE_TOKEN}` },
      body: JSON.stringify({ outcome: 'approved', note: 'auditability over speed' }),
    });
    expect(res.status).toBe(200);
    const choice = await eventually(() => valueChoiceOf(runB), 15_000, 'run B’s value choice');
    expect(choice).toMatchObject({
      outcome: 'approved',
      chosen_by: 'alice',
      note: 'auditability over speed',
      terminal_state: 'decided-with-dissent',
    });
    expect((await owners.alice().get(runB)).terminal?.terminal_state).toBe('decided-with-dissent');

    // Bob's resolution came first in the log and is long handled: run A took no choice.
    await eventually(async () => (council().get(AcpReactions).backlog === 0 ? true : undefined), 10_000, 'no reaction left');
    expect(await valueChoiceOf(runA)).toBeUndefined();
    expect((await owners.alice().get(runA)).terminal?.terminal_state).toBe('needs-human-value-choice');
    // The refused choice is on the audit chain, once, in bob's name, authenticated (ACP verified him).
    const refused = await auditedRefusals(
      { actor: 'bob', action: 'rejected:council.acp.value-choice' },
      'the refused value choice audited',
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      outcome: 'rejected',
      proposal_id: a['proposal_id'],
      authenticated: true,
      error: { code: 'NOT_AUTHORIZED_ROLE', field: 'chosen_by' },
    });
    // Alice's accepted choice of run B is no refusal.
    expect(await h.auditEntries({ actor: 'alice', action: 'rejected:council.acp.value-choice' })).toEqual([]);
  });

  it('a signed ACP proposal asking for deliberation starts the owner’s run, whose decision goes back caused by it; another’s request starts nothing', async () => {
    const goal = (tag: string) => scriptedGoalContract({ goal_contract_id: `gc-${tag}`, decision_owner: 'alice' });
    // Mallory asks for a council in alice's name: refused by StartRun, no run.
    const forgedAsk = await (
      await h.clientFor('mallory')
    ).propose({
      domain: DOMAIN,
      author: 'mallory',
      quorum: 2,
      payload: { deliberate: { goal_contract: goal('s6'), panel: seat('s6'), policy: { stage_timeout_ms: 10_000 } } },
    });
    // Alice asks through the SDK: a proposal whose payload carries `deliberate`.
    const { proposal: ask, run_id: runId } = await alice.requestDeliberation({
      domain: DOMAIN,
      author: 'alice',
      quorum: 2,
      goal_contract: { ...goal('s7') },
      panel: seat('s7'),
      policy: { stage_timeout_ms: 10_000 },
    });
    expect(runId).toBe(`acp_${ask.proposal_id}`);
    expect((await councilDecisions.waitFor(runId)).terminal_state).toBe('decided');
    const rec = await eventually(
      async () => {
        const r = await owners.alice().get(runId);
        return r.acp_bridge ? r : undefined;
      },
      15_000,
      'the decision posted back',
    );
    expect(rec.acp_bridge).toMatchObject({
      requested_by: 'alice',
      authorised_by: { kind: 'acp-origin', proposal_id: ask.proposal_id },
      author: SERVICE,
      caused_by: [ask.proposal_id],
    });
    expect(await alice.get(rec.acp_bridge!.observation_id)).toMatchObject({ author: SERVICE, caused_by: [ask.proposal_id] });
    expect(await alice.get(rec.acp_bridge!.proposal_id)).toMatchObject({ author: SERVICE, caused_by: [rec.acp_bridge!.observation_id] });

    await eventually(async () => (council().get(AcpReactions).backlog === 0 ? true : undefined), 10_000, 'no reaction left');
    await expect(owners.alice().get(`acp_${forgedAsk.proposal_id}`)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    // Mallory's request is on the audit chain as a refusal, once, in her name; alice's is not.
    const refused = await auditedRefusals(
      { proposal_id: forgedAsk.proposal_id, action: 'rejected:council.acp.start-run' },
      'the refused deliberation request audited',
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      actor: 'mallory',
      outcome: 'rejected',
      authenticated: true,
      error: { code: 'NOT_AUTHORIZED_ROLE' },
    });
    expect(await h.auditEntries({ proposal_id: ask.proposal_id, action: 'rejected:council.acp.start-run' })).toEqual([]);
  });

  it('given an ACP-started run in a domain where the council service may not post, when it decides, then the refused post is audited once in the owner’s name and nothing reaches ACP', async () => {
    // Carol may propose in ops; the council service's grant is in billing only: ACP intake refuses its post (ACP_REFUSED).
    const carol = await h.clientFor('carol');
    const { proposal: ask, run_id: runId } = await carol.requestDeliberation({
      domain: 'ops',
      author: 'carol',
      quorum: 2,
      goal_contract: { ...scriptedGoalContract({ goal_contract_id: 'gc-s10', decision_owner: 'carol' }) },
      panel: seat('s10'),
      policy: { stage_timeout_ms: 10_000 },
    });
    expect((await councilDecisions.waitFor(runId)).terminal_state).toBe('decided');
    const refused = await auditedRefusals(
      { proposal_id: ask.proposal_id, action: 'rejected:council.acp.bridge' },
      'the refused post audited',
    );
    await eventually(async () => (council().get(AcpReactions).backlog === 0 ? true : undefined), 10_000, 'no reaction left');
    expect(await h.auditEntries({ proposal_id: ask.proposal_id, action: 'rejected:council.acp.bridge' })).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      actor: 'carol',
      outcome: 'rejected',
      authenticated: true,
      error: { code: 'ACP_REFUSED', field: 'domain' },
    });
    const owned = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('carol', pem('carol')), timeoutMs: 15_000 });
    expect((await owned.get(runId)).acp_bridge).toBeUndefined();
    const { proposals } = await carol.list({ domain: 'ops', limit: 500 });
    expect(proposals.filter((p) => (p.payload as { council?: { run_id?: string } }).council?.run_id === runId)).toEqual([]);
  });

  it('as an attacker: mallory, alone on the panel of the council she asks ACP for (proposer and chair, min_quorum 1, bridge quorum 1), gets no decision into ACP to endorse herself: the run decides, its post is refused NOT_AUTHORIZED_ROLE in her name, and nothing reaches ACP', async () => {
    // Her member stops with this test: the next one seats her again with a behaviour of its own.
    const member = new ScriptedMember(h.nc, 'mallory', { score: () => 5 }, prefix, ed25519Signer('mallory', pem('mallory'))).start();
    const mallory = await h.clientFor('mallory');
    const { proposal: ask, run_id: runId } = await mallory.requestDeliberation({
      domain: DOMAIN,
      author: 'mallory',
      quorum: 5,
      goal_contract: {
        ...scriptedGoalContract({ goal_contract_id: 'gc-solo', decision_owner: 'mallory', question: 'Pay mallory 1,000,000?' }),
      },
      panel: [scriptedDescriptor('mallory', 'builder', ['proposer', 'chair'])],
      policy: { stage_timeout_ms: 5_000, min_quorum: 1 },
      bridge: { quorum: 1 },
    });
    expect((await councilDecisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const refused = await auditedRefusals(
      { proposal_id: ask.proposal_id, action: 'rejected:council.acp.bridge' },
      'the refused post audited',
    );
    expect(refused[0]).toMatchObject({
      actor: 'mallory',
      outcome: 'rejected',
      error: { code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.decision_owner' },
    });
    const owned = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('mallory', pem('mallory')), timeoutMs: 15_000 });
    expect((await owned.get(runId)).acp_bridge).toBeUndefined();
    const { proposals } = await mallory.list({ domain: DOMAIN, limit: 500 });
    expect(proposals.filter((p) => (p.payload as { council?: { run_id?: string } }).council?.run_id === runId)).toEqual([]);
    await member.stop();
  });

  it('as an attacker: mallory, mid-run, revises her council’s GoalContract to hand it to another owner or move it to risk (no grant there), then each revision is refused, the run decides in billing under her, and nothing reaches ACP in risk or in her name', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let proposing!: () => void;
    const held = new Promise<void>((r) => (proposing = r));
    const behaviour = { score: () => 5, hold: () => (proposing(), gate) };
    const member = new ScriptedMember(h.nc, 'mallory', behaviour, prefix, ed25519Signer('mallory', pem('mallory'))).start();
    const mallory = await h.clientFor('mallory');
    const contract = scriptedGoalContract({ goal_contract_id: 'gc-hand', decision_owner: 'mallory', domain: DOMAIN });
    const { run_id: runId } = await mallory.requestDeliberation({
      domain: DOMAIN,
      author: 'mallory',
      quorum: 5,
      goal_contract: { ...contract },
      panel: [scriptedDescriptor('mallory', 'builder', ['proposer', 'chair'])],
      policy: { stage_timeout_ms: 10_000, min_quorum: 1 },
      bridge: { quorum: 1 },
    });
    await held;
    const owner = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('mallory', pem('mallory')), timeoutMs: 15_000 });
    for (const [change, field] of [
      [{ goal_contract_id: 'gc-hand-2', decision_owner: 'nobody-at-all' }, 'goal_contract.decision_owner'],
      [{ goal_contract_id: 'gc-hand-3', domain: 'risk' }, 'goal_contract.domain'],
    ] as const) {
      await expect(
        owner.reviseGoalContract({ run_id: runId, goal_contract: { ...contract, ...change }, actor: 'mallory' }),
      ).rejects.toMatchObject({
        code: 'NOT_AUTHORIZED_ROLE',
        field,
      });
    }
    release();
    expect((await councilDecisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const record = await owner.get(runId);
    expect(record.goal_contract_revisions.map((r) => r.goal_contract.goal_contract_id)).toEqual(['gc-hand']);
    expect(record.domain).toBe(DOMAIN);
    // Her own panel: the decision is not bridged (5.3), in billing or anywhere else.
    await eventually(async () => (council().get(AcpReactions).backlog === 0 ? true : undefined), 15_000, 'no reaction left');
    expect(record.acp_bridge).toBeUndefined();
    for (const domain of [DOMAIN, 'risk']) {
      const { proposals } = await h.admin.list({ domain, limit: 500 });
      expect(proposals.filter((p) => (p.payload as { council?: { run_id?: string } }).council?.run_id === runId)).toEqual([]);
    }
    await member.stop();
  });

  it('a council service given bridge domains registers its own participant at start, once, and posts as it; a registered one is never changed', async () => {
    const booted = 'council-boot';
    const first = generateParticipantKeys();
    const second = generateParticipantKeys();
    const firstFile = join(keyDir, 'boot-1.pem');
    const secondFile = join(keyDir, 'boot-2.pem');
    writeFileSync(firstFile, first.privateKeyPem, { mode: 0o600 });
    writeFileSync(secondFile, second.privateKeyPem, { mode: 0o600 });
    const runId = await run('s9', 'alice', DOMAIN);
    const registered = async () =>
      (await h.admin.call<{ participant: Record<string, any> }>(REGISTRY_PATTERNS.get, { participant_id: booted })).participant;
    await expect(registered()).rejects.toMatchObject({ code: 'SCHEMA_VIOLATION' });

    const keyed = h.instances.find((i) => i.name === 'council')!;
    await h.kill(keyed);
    const env = { ...h.env, CONCLAVE_COUNCIL_PARTICIPANT: booted };
    // Given no such participant, when a service with a key and two domains starts, then it is registered.
    let service = await startCouncil(
      loadConfig(CouncilConfig, { ...env, CONCLAVE_COUNCIL_KEY_FILE: firstFile, CONCLAVE_COUNCIL_BRIDGE_DOMAINS: `${DOMAIN},ops.deploy` }),
    );
    try {
      const p = await registered();
      expect(p).toMatchObject({ status: 'active', roles: ['agent'] });
      expect(p['keys'].map((k: { public_key: string; status: string }) => [k.public_key, k.status])).toEqual([[first.publicKey, 'active']]);
      expect(
        Object.values(p['grants'])
          .map((g: any) => [g.domain, g.actions, g.domain_authority, g.trust_score])
          .sort(),
      ).toEqual([
        [DOMAIN, ['propose', 'escalate'], 0, 0],
        ['ops.deploy', ['propose', 'escalate'], 0, 0],
      ]);
      // And the owner's post goes to ACP in its name.
      const bridged = await bridge('alice', { run_id: runId, quorum: 2 });
      expect(bridged).toMatchObject({ ok: true, author: booted, status: 'pending' });
      expect(await alice.get(bridged['proposal_id'])).toMatchObject({ author: booted });
    } finally {
      await service.close();
    }
    // Given it registered, when a service with another key and other domains starts, then nothing changes.
    const before = await registered();
    service = await startCouncil(
      loadConfig(CouncilConfig, { ...env, CONCLAVE_COUNCIL_KEY_FILE: secondFile, CONCLAVE_COUNCIL_BRIDGE_DOMAINS: 'finance' }),
    );
    try {
      expect(await registered()).toEqual(before);
    } finally {
      await service.close();
      await h.add('council');
    }
  });

  it('a council service without a key of its own refuses to post (BRIDGE_NOT_CONFIGURED) instead of posting unsigned', async () => {
    const runId = await run('s8', 'alice', DOMAIN);
    // The keyed service steps aside; the same service without CONCLAVE_COUNCIL_KEY_FILE takes the commands.
    const keyed = h.instances.find((i) => i.name === 'council')!;
    await h.kill(keyed);
    const keyless = await startCouncil(loadConfig(CouncilConfig, { ...h.env, CONCLAVE_COUNCIL_KEY_FILE: '' }));
    try {
      expect(await bridge('alice', { run_id: runId, quorum: 2 })).toMatchObject({ ok: false, error: { code: 'BRIDGE_NOT_CONFIGURED' } });
      expect(await entriesOf(runId)).toEqual([]);
    } finally {
      await keyless.close();
      await h.add('council');
    }
  });
});
