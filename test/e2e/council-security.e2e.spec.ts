import { AUTH_HEADERS } from '@conclave/registry-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { CouncilClient, CouncilRequestError, ed25519Signer } from '@conclave/sdk';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { headers as natsHeaders } from 'nats';
import { ulid } from 'ulid';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

/**
 * The Council under authentication (CONCLAVE_AUTH_MODE=required, intake holding the registry):
 * commands are signed like ACP commands; owner, chair, member and observer rights are checked;
 * the anonymisation mapping reaches only the owner, after the run. Each attack is refused.
 */
describe('Council security: signed commands and run rights over NATS', () => {
  const h = new SecureConclaveHarness();
  const prefix = `c${h.prefix}`;
  let decisions: CouncilDecisionCollector;
  const members: ScriptedMember[] = [];
  const proposers = ['cs-builder', 'cs-skeptic', 'cs-operator'];
  const panel = scriptedPanel({ proposers, chair: 'cs-chair' });
  const goal = scriptedGoalContract({ decision_owner: 'alice' });
  const as = (id: string, key = id) => new CouncilClient(h.nc, prefix, { signer: ed25519Signer(id, h.keys.get(key)!.privateKeyPem) });
  const refused = async (p: Promise<unknown>, code: string, field?: string) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CouncilRequestError);
    expect(err).toMatchObject(field ? { code, field } : { code });
  };

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed([
      { participant_id: 'alice', grants: [{ domain: 'general', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory' },
      { participant_id: 'cs-chair' },
      { participant_id: 'auditor' },
      ...proposers.map((participant_id) => ({ participant_id })),
    ]);
    decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
  });
  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  /** A run owned by alice whose reviews wait until released (so it is mid-run while attacked). */
  async function midRun(): Promise<{ runId: string; release: () => void }> {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    for (const id of [...proposers, 'cs-chair'])
      members.push(
        new ScriptedMember(
          h.nc,
          id,
          cleanBehaviour({ hold: (t) => (t.stage === 'review' ? gate : undefined) }),
          prefix,
          ed25519Signer(id, h.keys.get(id)!.privateKeyPem),
        ).start(),
      );
    const runId = await as('alice').start({ goal_contract: goal, panel, policy: { stage_timeout_ms: 20_000, observers: ['auditor'] } });
    return { runId, release };
  }

  it('unauthenticated: start, get, interrupt and outcome without a signature are UNAUTHENTICATED', async () => {
    const anonymous = new CouncilClient(h.nc, prefix);
    await refused(anonymous.start({ goal_contract: goal, panel }), 'UNAUTHENTICATED');
    await refused(anonymous.get('any_run'), 'UNAUTHENTICATED');
    await refused(anonymous.interrupt({ run_id: 'any_run', reason: 'x', actor: 'alice' }), 'UNAUTHENTICATED');
    await refused(anonymous.recordOutcome({ run_id: 'any_run', actor: 'alice', outcome: {} }), 'UNAUTHENTICATED');
  });

  it("forged: a signature that does not verify, or alice's id signed with mallory's key, is UNAUTHENTICATED", async () => {
    const forger = new CouncilClient(h.nc, prefix, {
      signer: () => ({
        [AUTH_HEADERS.participant]: 'alice',
        [AUTH_HEADERS.timestamp]: new Date().toISOString(),
        [AUTH_HEADERS.nonce]: ulid(),
        [AUTH_HEADERS.signature]: Buffer.alloc(64, 7).toString('base64'),
      }),
    });
    await refused(forger.start({ goal_contract: goal, panel }), 'UNAUTHENTICATED');
    await refused(as('alice', 'mallory').start({ goal_contract: goal, panel }), 'UNAUTHENTICATED');
  });

  it("as another participant: mallory starting alice's council, or declaring actor alice, is refused", async () => {
    await refused(as('mallory').start({ goal_contract: goal, panel }), 'NOT_AUTHORIZED_ROLE', 'goal_contract.decision_owner');
    await refused(as('mallory').start({ goal_contract: goal, panel, actor: 'alice' }), 'FORBIDDEN', 'actor');
  });

  it("forged member answers: unsigned, or signed by mallory on cs-builder's answer subject, are refused and leave no trace in the run", async () => {
    const { runId, release } = await midRun();
    const answerAs = async (signer?: ReturnType<typeof ed25519Signer>) => {
      const subject = `${prefix}.v1.answers.cs-builder`;
      const body = new TextEncoder().encode(
        JSON.stringify({ run_id: runId, task_id: 'task-forged', ok: true, artifact: { position: 'mallory was here' } }),
      );
      const signed = signer ? await signer(subject, body) : {};
      const hdrs = natsHeaders();
      for (const [k, v] of Object.entries(signed)) hdrs.set(k, v);
      return (await h.nc.request(subject, body, { timeout: 10_000, headers: hdrs })).json<{
        ok: boolean;
        retry: boolean;
        error?: { code: string };
      }>();
    };
    expect(await answerAs()).toMatchObject({ ok: false, retry: false, error: { code: 'UNAUTHENTICATED' } });
    expect(await answerAs(ed25519Signer('mallory', h.keys.get('mallory')!.privateKeyPem))).toMatchObject({
      ok: false,
      retry: false,
      error: { code: 'FORBIDDEN' },
    });
    expect(await answerAs(ed25519Signer('cs-builder', h.keys.get('mallory')!.privateKeyPem))).toMatchObject({
      ok: false,
      error: { code: 'UNAUTHENTICATED' },
    });
    release();
    expect((await decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);
    const record = await as('alice').get(runId);
    expect(record.refusals).toEqual([]);
    expect(JSON.stringify(record)).not.toContain('mallory was here');
  });

  it('mid-run: mallory cannot interrupt, re-scope, record an outcome or read; the chair cannot read; the owner and the observer read without the mapping', async () => {
    const { runId, release } = await midRun();
    await refused(as('mallory').interrupt({ run_id: runId, reason: 'stop', actor: 'mallory' }), 'NOT_AUTHORIZED_ROLE', 'actor');
    await refused(as('mallory').interrupt({ run_id: runId, reason: 'stop', actor: 'alice' }), 'FORBIDDEN', 'actor');
    await refused(
      as('mallory').reviseGoalContract({ run_id: runId, goal_contract: { ...goal, goal_contract_id: 'gc-evil' }, actor: 'mallory' }),
      'NOT_AUTHORIZED_ROLE',
    );
    await refused(
      as('mallory').recordOutcome({
        run_id: runId,
        actor: 'mallory',
        outcome: { outcome_id: 'o-x', observed_at: new Date().toISOString(), summary: 'fake', source: 'mallory' },
      }),
      'NOT_AUTHORIZED_ROLE',
      'actor',
    );
    await refused(as('mallory').get(runId), 'NOT_AUTHORIZED_ROLE');
    await refused(as('cs-chair').get(runId), 'NOT_AUTHORIZED_ROLE');
    expect((await as('alice').get(runId)).anonymization).toEqual({ restricted: true, withheld: true, mapping: [] });
    expect((await as('auditor').get(runId)).anonymization.mapping).toEqual([]);
    release();
    const d = await decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);
    expect((await as('alice').get(runId)).anonymization.mapping).toHaveLength(3);
    expect((await as('cs-chair').get(runId)).anonymization.mapping).toEqual([]);
    await as('alice').recordOutcome({
      run_id: runId,
      actor: 'alice',
      outcome: { outcome_id: 'o-1', observed_at: new Date().toISOString(), summary: 'shipped', source: 'ops' },
    });
    expect((await as('alice').get(runId)).outcomes).toEqual([expect.objectContaining({ outcome_id: 'o-1' })]);
  });
});
