import { RunRecord } from '@conclave/council-protocol';
import { ScriptedBehaviour, scriptedGoalContract, scriptedPanel, valueConflictBehaviour } from '@conclave/sdk';
import { CouncilHarness } from '../support/council-harness';
import { DecisionCollector } from '../support/decisions';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The bridge from Council to ACP end to end: apps/council, intake, resolver and escalation on the
 * real NATS server. A council's DecisionRecord becomes an ACP observation and a proposal in the
 * GoalContract's domain (payload = decision and actions, `caused_by` = the observation that
 * records the decision); agents vote and the resolver decides; a value choice becomes an ACP
 * escalation to the decision owner, which the human resolves.
 */
describe('council → ACP bridge end to end (apps/council + intake + resolver + escalation over NATS)', () => {
  const c = new CouncilHarness();
  const owner = 'human-owner';
  let decisions: DecisionCollector;
  let n = 0;

  beforeAll(async () => {
    await c.start();
    await c.h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(c.h.client);
  });
  afterAll(() => c.stop());
  afterEach(() => c.stopMembers());

  async function request<T>(command: string, body: unknown): Promise<T> {
    const msg = await c.h.nc.request(`${c.prefix}.v1.${command}`, encoder.encode(JSON.stringify(body)), { timeout: 15_000 });
    return JSON.parse(decoder.decode(msg.data)) as T;
  }

  async function council(domain: string, behaviour: ScriptedBehaviour = { score: () => 3 }): Promise<RunRecord> {
    const tag = `br${++n}`;
    const proposers = ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`);
    const chair = `${tag}-chair`;
    c.join(Object.fromEntries([...proposers, chair].map((id) => [id, behaviour])));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${tag}`, domain }),
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 5_000 },
      run_id: `bridge_${tag}`,
    });
    await c.decisions.waitFor(runId);
    return c.client.get(runId, owner);
  }

  type Bridged = { ok: true; proposal_id: string; observation_id: string; domain: string; status: string; escalated: boolean };

  it('council → ACP proposal → agents’ votes → decision; the lineage runs from the decision record to the proposal', async () => {
    const r = await council('billing.migrations');
    expect(r.terminal?.terminal_state).toBe('decided');
    const bridged = await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 2, actor: owner });
    expect(bridged).toMatchObject({ ok: true, domain: 'billing.migrations', status: 'pending', escalated: false });

    // The observation records the DecisionRecord (auto-resolved); the proposal carries the decision and its actions.
    const observation = await c.h.client.get(bridged.observation_id);
    expect(observation).toMatchObject({ type: 'observation', status: 'resolved', domain: 'billing.migrations' });
    expect(observation.resolution).toMatchObject({ outcome: 'approved' });
    expect((observation.payload as { decision_record: { decision_id: string } }).decision_record.decision_id).toBe(
      r.decision_record?.decision_id,
    );
    const proposal = await c.h.client.get(bridged.proposal_id);
    expect(proposal).toMatchObject({ type: 'proposal', author: owner, domain: 'billing.migrations', caused_by: [bridged.observation_id] });
    expect(proposal.payload).toMatchObject({
      kind: 'council-decision',
      council: { run_id: r.run_id, decision_id: r.decision_record?.decision_id, terminal_state: 'decided' },
      decision: r.decision_record?.decision,
      actions: r.decision_record?.actions,
    });
    const lineage = await c.h.client.lineage(bridged.observation_id);
    expect(JSON.stringify(lineage)).toContain(bridged.proposal_id);

    // A retry posts the same entries (ids derived from the run), not new ones.
    expect(await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 2, actor: owner })).toMatchObject({
      proposal_id: bridged.proposal_id,
      observation_id: bridged.observation_id,
    });

    // The agent fleet votes under the domain's quorum: two endorsements approve it.
    const vote = { confidence: 0.9, domain_authority: 0.8, trust_score: 0.8 };
    await c.h.client.endorse(bridged.proposal_id, { participant_id: 'agent-ops-1', ...vote });
    await c.h.client.endorse(bridged.proposal_id, { participant_id: 'agent-ops-2', ...vote });
    const [d] = await decisions.waitFor(bridged.proposal_id);
    expect(d).toMatchObject({ proposal_id: bridged.proposal_id, outcome: 'approved', domain: 'billing.migrations' });
  });

  it('council → value choice → ACP escalation to the decision owner → the human resolves it', async () => {
    const r = await council('billing.pricing', valueConflictBehaviour());
    expect(r.terminal?.terminal_state).toBe('needs-human-value-choice');
    const bridged = await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 3, actor: owner });
    expect(bridged).toMatchObject({ ok: true, status: 'escalated', escalated: true });
    const escalated = await c.h.client.get(bridged.proposal_id);
    expect(JSON.stringify(escalated)).toContain('needs-human-value-choice');
    expect(JSON.stringify(escalated)).toContain('conflict-value-01');
    const resolved = await c.h.client.resolve(bridged.proposal_id, {
      outcome: 'approved',
      resolved_by: owner,
      note: 'auditability over speed',
    });
    expect(resolved).toMatchObject({ status: 'resolved', resolution: { outcome: 'approved' } });
    const all = await decisions.waitFor(bridged.proposal_id, 2);
    expect(all.map((x) => x.outcome)).toEqual(['escalated', 'approved']);
  });

  it('only the decision owner posts; a run without a DecisionRecord is refused', async () => {
    const r = await council('billing.misc');
    expect(await request('acp.propose', { run_id: r.run_id, quorum: 2, actor: 'mallory' })).toMatchObject({
      ok: false,
      error: { code: 'NOT_AUTHORIZED_ROLE' },
    });
    const tag = `br${++n}`;
    const proposers = ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`);
    // Nobody listens: the run ends failed-below-quorum, with no DecisionRecord.
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${tag}`, domain: 'billing.misc' }),
      panel: scriptedPanel({ proposers, chair: `${tag}-chair` }),
      policy: { stage_timeout_ms: 2_000 },
      run_id: `bridge_${tag}`,
    });
    expect((await c.decisions.waitFor(runId)).terminal_state).toBe('failed-below-quorum');
    expect(await request('acp.propose', { run_id: runId, quorum: 2, actor: owner })).toMatchObject({
      ok: false,
      error: { code: 'INVALID_STATE' },
    });
  });
});
