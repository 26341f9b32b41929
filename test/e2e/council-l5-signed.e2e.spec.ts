import { acpStreamNames } from '@conclave/messaging';
import { CouncilClient, ed25519Signer } from '@conclave/sdk';
import { scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { headers as natsHeaders } from 'nats';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * council:L5 outcomes under authentication (CONCLAVE_AUTH_MODE=required): an outcome is recorded
 * only in a signed command, by the decision owner or an evaluator the policy names, each as
 * itself; an attacker's unsigned, impersonating or unauthorised attempt is refused.
 */
describe('council:L5 signed outcomes (authentication required, over NATS)', () => {
  const h = new SecureConclaveHarness();
  const prefix = `c${h.prefix}`;
  let decisions: CouncilDecisionCollector;
  const members: ScriptedMember[] = [];
  const proposers = ['l5s-builder', 'l5s-skeptic', 'l5s-operator'];
  const chair = 'l5s-chair';

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed([
      { participant_id: 'alice', grants: [{ domain: 'payments', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory' },
      { participant_id: 'qa-bot' },
      { participant_id: chair },
      ...proposers.map((participant_id) => ({ participant_id })),
    ]);
    decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
  });
  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await jsm.streams.delete(acpStreamNames(h.run).councilOutcomes).catch(() => undefined);
    await h.stop();
  });

  const pem = (id: string) => h.privateKeyOf(id);

  /** `council.v1.outcome.record`, signed by `signer` (unsigned when undefined). */
  async function record(signer: string | undefined, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const subject = `${prefix}.v1.outcome.record`;
    const bytes = encoder.encode(JSON.stringify(body));
    const extra = signer ? await ed25519Signer(signer, pem(signer))(subject, bytes) : undefined;
    const hs = extra ? natsHeaders() : undefined;
    if (hs && extra) for (const [k, v] of Object.entries(extra)) hs.set(k, v);
    const msg = await h.nc.request(subject, bytes, { timeout: 10_000, headers: hs });
    return JSON.parse(decoder.decode(msg.data)) as Record<string, unknown>;
  }

  it('the owner and the evaluator record signed outcomes; unsigned, impersonating and unauthorised attempts are refused', async () => {
    for (const id of [...proposers, chair])
      members.push(new ScriptedMember(h.nc, id, { score: () => 3 }, prefix, ed25519Signer(id, pem(id))).start());
    const alice = new CouncilClient(h.nc, prefix, { signer: ed25519Signer('alice', pem('alice')) });
    const runId = await alice.start({
      goal_contract: scriptedGoalContract({ decision_owner: 'alice', domain: 'payments' }),
      panel: scriptedPanel({ proposers, chair }),
      policy: { level: 'council:L5', aggregation: 'borda', evaluators: ['qa-bot'], stage_timeout_ms: 10_000 },
    });
    const d = await decisions.waitFor(runId);
    const decision = d.decision_record as { decision_id: string; actions: string[] };
    const outcome = (id: string) => ({
      outcome_id: id,
      decision_id: decision.decision_id,
      observed_at: '2026-11-30T12:00:00.000Z',
      source_kind: 'operational-observation',
      verdict: 'success',
      actions: [{ action: decision.actions[0], status: 'done' }],
      summary: 'ledger reconciled for a week',
      evidence_refs: ['dash-reconciliation'],
    });

    // Unsigned: the command is refused before anything is decided.
    expect(await record(undefined, { run_id: runId, outcome: outcome('o-unsigned') })).toMatchObject({
      ok: false,
      error: { code: 'UNAUTHENTICATED' },
    });
    // Mallory signing as herself but declaring alice: FORBIDDEN; as herself: not a recorder.
    expect(await record('mallory', { run_id: runId, outcome: outcome('o-forged'), actor: 'alice' })).toMatchObject({
      ok: false,
      error: { code: 'FORBIDDEN' },
    });
    expect(await record('mallory', { run_id: runId, outcome: outcome('o-mallory') })).toMatchObject({
      ok: false,
      error: { code: 'NOT_AUTHORIZED_ROLE' },
    });
    // The owner and the named evaluator, each signing as itself.
    expect(await record('alice', { run_id: runId, outcome: outcome('o-alice') })).toMatchObject({ ok: true, outcome_id: 'o-alice' });
    expect(await record('qa-bot', { run_id: runId, outcome: outcome('o-qa') })).toMatchObject({ ok: true, outcome_id: 'o-qa' });
    const run = await alice.get(runId);
    expect(run.outcomes.map((o) => [o.outcome_id, o.structured?.recorded_by, o.structured?.recorder_role])).toEqual([
      ['o-alice', 'alice', 'decision-owner'],
      ['o-qa', 'qa-bot', 'evaluator'],
    ]);
  });
});
