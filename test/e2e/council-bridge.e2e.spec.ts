import { CouncilEvent, RunRecord, councilRunStream, validateRunRecord } from '@conclave/council-protocol';
import type { EventLog } from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';
import { ScriptedBehaviour, scriptedGoalContract, scriptedPanel, valueConflictBehaviour } from '@conclave/sdk/testing';
import { AcpReactions } from '../../apps/council/src/app/acp-reactions';
import { eventually } from '../support/conclave-harness';
import { CouncilHarness } from '../support/council-harness';
import { DecisionCollector } from '../support/decisions';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The bridge between Council and ACP end to end, with authentication off: apps/council, intake,
 * resolver and escalation on the real NATS server. A council's DecisionRecord becomes an ACP
 * observation and a proposal in the GoalContract's domain, posted by the council service as its
 * own participant (payload = decision and actions, `caused_by` = the observation that records the
 * decision); agents vote and the resolver decides. A value choice becomes an ACP escalation to
 * the decision owner, whose resolution resumes the run (ResolveValueChoice), also across a
 * restart of the council service. An ACP proposal that asks for deliberation starts a run, whose
 * decision goes back to ACP caused by that proposal. The same under authentication, with the
 * attacks: council-bridge-signed.e2e.spec.ts.
 */
describe('council → ACP bridge end to end (apps/council + intake + resolver + escalation over NATS)', () => {
  const c = new CouncilHarness();
  const owner = 'human-owner';
  let decisions: DecisionCollector;
  let n = 0;

  beforeAll(async () => {
    await c.start();
    // More services on the harness's one connection (a second start() would open another, never drained).
    for (const name of ['intake', 'resolver', 'escalation'] as const) await c.h.add(name);
    decisions = new DecisionCollector(c.h.client);
  });
  afterAll(() => c.stop());
  afterEach(() => c.stopMembers());

  async function request<T>(command: string, body: unknown): Promise<T> {
    const msg = await c.h.nc.request(`${c.prefix}.v1.${command}`, encoder.encode(JSON.stringify(body)), { timeout: 15_000 });
    return JSON.parse(decoder.decode(msg.data)) as T;
  }

  /** A panel of scripted members for one test: ids of their own, joined now. */
  function members(behaviour: ScriptedBehaviour = { score: () => 3 }) {
    const tag = `br${++n}`;
    const proposers = ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`);
    const chair = `${tag}-chair`;
    c.join(Object.fromEntries([...proposers, chair].map((id) => [id, behaviour])));
    return { tag, panel: scriptedPanel({ proposers, chair }) };
  }

  async function council(domain: string, behaviour: ScriptedBehaviour = { score: () => 3 }): Promise<RunRecord> {
    const { tag, panel } = members(behaviour);
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${tag}`, domain }),
      panel,
      policy: { stage_timeout_ms: 5_000 },
      run_id: `bridge_${tag}`,
    });
    await c.decisions.waitFor(runId);
    return c.client.get(runId, owner);
  }

  /** The run's messages on COUNCIL_DECISIONS, in order. */
  const published = (runId: string) => c.decisions.received.filter((d) => d.run_id === runId);

  type Bridged = {
    ok: true;
    proposal_id: string;
    observation_id: string;
    domain: string;
    author: string;
    status: string;
    escalated: boolean;
  };

  it('council → ACP proposal → agents’ votes → decision; the lineage runs from the decision record to the proposal', async () => {
    const r = await council('billing.migrations');
    expect(r.terminal?.terminal_state).toBe('decided');
    const bridged = await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 2, actor: owner });
    expect(bridged).toMatchObject({
      ok: true,
      domain: 'billing.migrations',
      author: 'council-service',
      status: 'pending',
      escalated: false,
    });

    // The observation records the DecisionRecord (auto-resolved); the proposal carries the decision and its actions.
    const observation = await c.h.client.get(bridged.observation_id);
    expect(observation).toMatchObject({ type: 'observation', status: 'resolved', domain: 'billing.migrations' });
    expect(observation.resolution).toMatchObject({ outcome: 'approved' });
    expect((observation.payload as { decision_record: { decision_id: string } }).decision_record.decision_id).toBe(
      r.decision_record?.decision_id,
    );
    const proposal = await c.h.client.get(bridged.proposal_id);
    expect(proposal).toMatchObject({
      type: 'proposal',
      author: 'council-service',
      domain: 'billing.migrations',
      caused_by: [bridged.observation_id],
    });
    expect(proposal.payload).toMatchObject({
      kind: 'council-decision',
      council: { run_id: r.run_id, decision_id: r.decision_record?.decision_id, terminal_state: 'decided', requested_by: owner },
      decision: r.decision_record?.decision,
      actions: r.decision_record?.actions,
    });
    const lineage = await c.h.client.lineage(bridged.observation_id);
    expect(JSON.stringify(lineage)).toContain(bridged.proposal_id);
    // The run records the post: who asked, on what authority, the entries' ids.
    expect((await c.client.get(r.run_id, owner)).acp_bridge).toMatchObject({
      requested_by: owner,
      authorised_by: { kind: 'owner-command' },
      author: 'council-service',
      proposal_id: bridged.proposal_id,
      observation_id: bridged.observation_id,
      escalated: false,
    });

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

  it('council → value choice → ACP escalation to the decision owner → the human resolves it → the run resumes and is decided', async () => {
    const r = await council('billing.pricing', valueConflictBehaviour());
    expect(r.terminal?.terminal_state).toBe('needs-human-value-choice');
    const bridged = await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 3, actor: owner });
    expect(bridged).toMatchObject({ ok: true, status: 'escalated', escalated: true });
    const escalated = await c.h.client.get(bridged.proposal_id);
    // The escalation, asked by the council service, leaves the value choice to the decision owner and names the conflict.
    expect(escalated).toMatchObject({
      status: 'escalated',
      escalation: {
        requested_by: 'council-service',
        note: `needs-human-value-choice: the council leaves a value choice to ${owner} (conflict-value-01)`,
      },
    });
    const resolved = await c.h.client.resolve(bridged.proposal_id, {
      outcome: 'approved',
      resolved_by: owner,
      note: 'auditability over speed',
    });
    expect(resolved).toMatchObject({ status: 'resolved', resolution: { outcome: 'approved' } });
    const all = await decisions.waitFor(bridged.proposal_id, 2);
    expect(all.map((x) => x.outcome)).toEqual(['escalated', 'approved']);

    // The council service sees the resolution and resumes the run with the human's choice.
    const resumed = await eventually(
      async () => {
        const rec = await c.client.get(r.run_id, owner);
        return rec.value_choice ? rec : undefined;
      },
      15_000,
      'the value choice in the RunRecord',
    );
    expect(resumed.value_choice).toMatchObject({
      outcome: 'approved',
      chosen_by: owner,
      note: 'auditability over speed',
      conflict_ids: ['conflict-value-01'],
      previous_terminal_state: 'needs-human-value-choice',
      terminal_state: 'decided-with-dissent',
      source: { acp_proposal_id: bridged.proposal_id },
    });
    expect(resumed.terminal?.terminal_state).toBe('decided-with-dissent');
    // The RunRecord after the choice passes the offline validator.
    expect(validateRunRecord(resumed)).toMatchObject({ valid: true, problems: [], terminal_state: 'decided-with-dissent' });
    // Downstream readers get the run's new terminal state as a second message.
    await eventually(async () => (published(r.run_id).length >= 2 ? true : undefined), 10_000, 'the second COUNCIL_DECISIONS message');
    expect(published(r.run_id).map((m) => m.terminal_state)).toEqual(['needs-human-value-choice', 'decided-with-dissent']);
    // The second message is the ValueChoiceResolved event: its id, and the choice it carries.
    const service = c.h.instances.find((i) => i.name === 'council')!;
    const log = await service.app.get<EventLog<CouncilEvent>>(EVENT_LOG).read(councilRunStream(r.run_id));
    const choice = log.events.filter((e) => e.event.type === 'ValueChoiceResolved');
    expect(choice).toHaveLength(1);
    const second = published(r.run_id)[1];
    expect(second.event_id).toBe(choice[0].event.event_id);
    expect(second.value_choice).toEqual(choice[0].event.data);
    expect(second.value_choice).toMatchObject({ outcome: 'approved', chosen_by: owner, terminal_state: 'decided-with-dissent' });
  });

  it('given bridge options ACP would refuse of the proposal (a weighted policy without its threshold), when the run is posted, then ACP_REFUSED and ACP holds nothing of the run; the corrected post goes through', async () => {
    const r = await council('billing.refused');
    const refused = await request<{ ok: false; error: { code: string; field?: string } }>('acp.propose', {
      run_id: r.run_id,
      quorum: 2,
      quorum_policy: { kind: 'weighted' },
      actor: owner,
    });
    expect(refused).toMatchObject({ ok: false, error: { code: 'ACP_REFUSED', field: 'quorum_policy.threshold' } });
    const between = new Date().toISOString();

    const bridged = await request<Bridged>('acp.propose', {
      run_id: r.run_id,
      quorum: 2,
      quorum_policy: { kind: 'weighted', threshold: 1 },
      actor: owner,
    });
    expect(bridged).toMatchObject({ ok: true, status: 'pending' });
    // The observation's ids derive from the run: had the refused post left it in ACP, the corrected
    // one would have found it there, resolved before the refusal was answered.
    const observation = await c.h.client.get(bridged.observation_id);
    expect((observation.resolution?.decided_at ?? '') > between).toBe(true);
    expect(await c.h.client.get(bridged.proposal_id)).toMatchObject({ quorum_policy: { kind: 'weighted', threshold: 1 } });
  });

  it('a human resolution while the council service is down resumes the run once it is back, exactly once', async () => {
    const r = await council('billing.retention', valueConflictBehaviour());
    const bridged = await request<Bridged>('acp.propose', { run_id: r.run_id, quorum: 3, actor: owner });
    expect(bridged).toMatchObject({ status: 'escalated' });
    const service = c.h.instances.find((i) => i.name === 'council')!;
    await c.h.kill(service);
    await c.h.client.resolve(bridged.proposal_id, { outcome: 'rejected', resolved_by: owner, note: 'keep speed this quarter' });
    await decisions.waitFor(bridged.proposal_id, 2);

    // Back: the reactor catches up on the log and hands the resolution to the run.
    const again = await c.h.add('council');
    const resumed = await eventually(
      async () => {
        const rec = await c.client.get(r.run_id, owner);
        return rec.value_choice ? rec : undefined;
      },
      15_000,
      'the value choice after the restart',
    );
    expect(resumed.value_choice).toMatchObject({ outcome: 'rejected', chosen_by: owner, note: 'keep speed this quarter' });
    expect(resumed.terminal?.terminal_state).toBe('needs-human-value-choice');

    // Once more, with the reactor's snapshot gone, so it replays the whole log: the same resolution
    // is the same command (its id derives from the resolution event), decided once.
    await c.h.kill(again);
    const os = await c.h.nc.jetstream().views.os(`${c.h.env['CONCLAVE_EVENT_STREAM']}_SNAPSHOTS`);
    await os.delete('council-council-acp');
    const third = await c.h.add('council');
    expect(third.app.get(AcpReactions).replayedFrom).toBe('start');
    await eventually(async () => (third.app.get(AcpReactions).backlog === 0 ? true : undefined), 10_000, 'no reaction left');
    const stream = await third.app.get<EventLog<CouncilEvent>>(EVENT_LOG).read(councilRunStream(r.run_id));
    expect(stream.events.filter((e) => e.event.type === 'ValueChoiceResolved')).toHaveLength(1);
    expect((await c.client.get(r.run_id, owner)).value_choice).toEqual(resumed.value_choice);
    await eventually(async () => (published(r.run_id).length >= 2 ? true : undefined), 10_000, 'the value choice message');
    expect(published(r.run_id)).toHaveLength(2);
  });

  it('an ACP proposal asking for deliberation starts a run; its decision goes back to ACP caused by that proposal', async () => {
    const { tag, panel } = members();
    const origin = await c.h.client.propose({
      domain: 'billing.ledger',
      author: owner,
      quorum: 2,
      payload: {
        deliberate: {
          goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${tag}`, decision_owner: owner }),
          panel,
          policy: { stage_timeout_ms: 5_000 },
        },
      },
    });
    const runId = `acp_${origin.proposal_id}`;
    const ended = await c.decisions.waitFor(runId);
    expect(ended.terminal_state).toBe('decided');
    const rec = await eventually(
      async () => {
        const r = await c.client.get(runId, owner);
        return r.acp_bridge ? r : undefined;
      },
      15_000,
      'the decision posted back to ACP',
    );
    expect(rec.acp_origin).toMatchObject({
      proposal_id: origin.proposal_id,
      domain: 'billing.ledger',
      author: owner,
      bridge: { quorum: 2 },
    });
    expect(rec.acp_bridge).toMatchObject({
      requested_by: owner,
      authorised_by: { kind: 'acp-origin', proposal_id: origin.proposal_id },
      domain: 'billing.ledger',
      caused_by: [origin.proposal_id],
    });
    const observation = await c.h.client.get(rec.acp_bridge!.observation_id);
    expect(observation).toMatchObject({ type: 'observation', caused_by: [origin.proposal_id] });
    const proposal = await c.h.client.get(rec.acp_bridge!.proposal_id);
    expect(proposal).toMatchObject({
      type: 'proposal',
      quorum: 2,
      caused_by: [rec.acp_bridge!.observation_id],
      payload: { kind: 'council-decision', council: { run_id: runId, acp_origin_proposal_id: origin.proposal_id } },
    });
    // The lineage (RFC 11.3) runs from the request to the council's recommendation.
    expect(JSON.stringify(await c.h.client.lineage(origin.proposal_id))).toContain(rec.acp_bridge!.proposal_id);
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
