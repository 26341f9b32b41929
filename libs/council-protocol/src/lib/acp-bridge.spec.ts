import { PROPOSAL_EVENT_TYPES, ProposalEvent } from '@conclave/acp-protocol';
import { acpBridgeEntries, councilRunIdForProposal, deliberationRequest } from './acp-bridge';
import { applyAcpReactionEvent, emptyAcpReactions } from './acp-reactions';
import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E } from './contracts';
import { CouncilCommand, decide } from './decide';
import { CouncilError } from './errors';
import { CouncilEvent, DecisionBridged } from './events';
import { buildRunRecord } from './run-record';
import { validateRunRecord } from './single-agent-council';
import { CouncilRunState, StartedRun, evolveRun, foldRun } from './state';
import { CouncilTaskRequest } from './controller';
import { T0, at, conflictMapFor, defaultBehaviour, drive, goalContract, panel, startCommand } from '../testing/council-fixtures';

const OWNER = 'human-owner';
const SERVICE = 'council-service';
const PROPOSAL_ID = '01KBR1DGEPR0P0SA100000000A';
const OBSERVATION_ID = '01KBR1DGE0BSERVAT10N00000A';
const ORIGIN_ID = '01KOR1G1NPR0P0SA1000000000';

const valueConflict = {
  conflict_id: 'conflict-v',
  type: 'value',
  positions: ['anon-A-v1'],
  description: 'speed vs auditability',
  value_owner: OWNER,
  decision_impact: 'high',
  status: 'unresolved',
};

/** A run that ended needs-human-value-choice (an open value conflict, which the chair retains as dissent). */
function valueChoiceRun(): StartedRun {
  const d = drive(startCommand(), defaultBehaviour({ conflicts: (req, round) => conflictMapFor(req, round, [valueConflict]) }));
  expect(d.state.status === 'terminated' && d.state.terminal.terminal_state).toBe('needs-human-value-choice');
  return d.state as StartedRun;
}

function apply(state: CouncilRunState, command: CouncilCommand): CouncilRunState {
  return foldRun(decide(command, state), state);
}

function bridged(escalated = true): DecisionBridged['data'] {
  return {
    requested_by: OWNER,
    authorised_by: { kind: 'owner-command' },
    author: SERVICE,
    domain: 'general',
    observation_id: OBSERVATION_ID,
    proposal_id: PROPOSAL_ID,
    caused_by: [],
    escalated,
  };
}

const bridge = (b = bridged()): CouncilCommand => ({ type: C.RecordDecisionBridge, bridge: b, now: at(60_000) });

const choice = (overrides: Partial<Extract<CouncilCommand, { type: 'ResolveValueChoice' }>> = {}): CouncilCommand => ({
  type: C.ResolveValueChoice,
  outcome: 'approved',
  chosen_by: OWNER,
  note: 'auditability over speed',
  acp_proposal_id: PROPOSAL_ID,
  acp_event_id: `${PROPOSAL_ID}:resolution-event`,
  now: at(120_000),
  ...overrides,
});

function refusal(f: () => unknown): { code: string; field?: string } {
  try {
    f();
  } catch (e) {
    if (e instanceof CouncilError) return { code: e.code, ...(e.field ? { field: e.field } : {}) };
    throw e;
  }
  throw new Error('expected a CouncilError');
}

describe('the bridge to ACP: entries posted by the council service for the owner', () => {
  it('given a decided run, when its entries are built, then the service is the author, the owner who asked is in the payload, and the proposal is caused by the observation', () => {
    const run = drive(startCommand(), defaultBehaviour()).state as StartedRun;
    const entries = acpBridgeEntries(
      run,
      { observation_id: OBSERVATION_ID, proposal_id: PROPOSAL_ID },
      { quorum: 2 },
      { author: SERVICE, requested_by: OWNER },
    );
    expect(entries.observation).toMatchObject({ author: SERVICE, type: 'observation', domain: 'general' });
    expect(entries.proposal).toMatchObject({
      author: SERVICE,
      type: 'proposal',
      quorum: 2,
      caused_by: [OBSERVATION_ID],
      payload: { kind: 'council-decision', council: { run_id: run.run_id, decision_owner: OWNER, requested_by: OWNER } },
    });
    expect(entries.escalation).toBeNull();
  });

  it('given a value-choice run, when its entries are built, then the escalation is asked by the service (ACP’s signer) and names the owner and the conflict', () => {
    const entries = acpBridgeEntries(
      valueChoiceRun(),
      { observation_id: OBSERVATION_ID, proposal_id: PROPOSAL_ID },
      { quorum: 3 },
      { author: SERVICE, requested_by: OWNER },
    );
    expect(entries.escalation?.requested_by).toBe(SERVICE);
    expect(entries.escalation?.reason).toContain(OWNER);
    expect(entries.escalation?.reason).toContain('conflict-v');
  });

  it('given a bridge asked by someone other than the decision owner, when recorded, then NOT_AUTHORIZED_ROLE', () => {
    const run = valueChoiceRun();
    expect(refusal(() => decide(bridge({ ...bridged(), requested_by: 'mallory' }), run))).toEqual({
      code: 'NOT_AUTHORIZED_ROLE',
      field: 'requested_by',
    });
  });

  it('given a value-choice run, when the bridge says it is not escalated, then INVALID_STATE (escalated exactly when a choice is open)', () => {
    const run = valueChoiceRun();
    expect(refusal(() => decide(bridge(bridged(false)), run))).toEqual({ code: 'INVALID_STATE', field: 'escalated' });
  });

  it('given a decided run whose decision owner sat on its panel (as a proposer, or as its chair), when its decision is bridged, then NOT_AUTHORIZED_ROLE at goal_contract.decision_owner: no entries, no DecisionBridged (5.3)', () => {
    for (const seat of ['member-builder-01', 'member-chair-01']) {
      const owner = seat;
      const run = drive(
        { ...startCommand({ goal: goalContract({ decision_owner: owner }), panel: panel() }), actor: owner } as CouncilCommand,
        defaultBehaviour(),
      ).state as StartedRun;
      expect(run.status === 'terminated' && run.decision).toBeTruthy();
      const ids = { observation_id: OBSERVATION_ID, proposal_id: PROPOSAL_ID };
      expect(refusal(() => acpBridgeEntries(run, ids, { quorum: 1 }, { author: SERVICE, requested_by: owner }))).toEqual({
        code: 'NOT_AUTHORIZED_ROLE',
        field: 'goal_contract.decision_owner',
      });
      expect(refusal(() => decide(bridge({ ...bridged(false), requested_by: owner }), run))).toEqual({
        code: 'NOT_AUTHORIZED_ROLE',
        field: 'goal_contract.decision_owner',
      });
    }
  });

  it('given bridge options ACP would refuse of the proposal alone, when the entries are built, then ACP_REFUSED at the field ACP names: nothing is posted, not even the observation', () => {
    const run = drive(startCommand(), defaultBehaviour()).state as StartedRun;
    const ids = { observation_id: OBSERVATION_ID, proposal_id: PROPOSAL_ID };
    const build = (options: Parameters<typeof acpBridgeEntries>[2]) => () =>
      acpBridgeEntries(run, ids, options, { author: SERVICE, requested_by: OWNER });
    // A weighted policy needs its threshold (7.2); a count threshold is the quorum (7.1).
    expect(refusal(build({ quorum: 2, quorum_policy: { kind: 'weighted' } }))).toEqual({
      code: 'ACP_REFUSED',
      field: 'quorum_policy.threshold',
    });
    expect(refusal(build({ quorum: 2, quorum_policy: { kind: 'count', threshold: 3 } }))).toEqual({
      code: 'ACP_REFUSED',
      field: 'quorum_policy.threshold',
    });
    // An expiry no later than the entry's creation (the decision's time).
    const decidedAt = acpBridgeEntries(run, ids, { quorum: 2 }, { author: SERVICE, requested_by: OWNER }).proposal['created_at'] as string;
    expect(refusal(build({ quorum: 2, expires_at: decidedAt }))).toEqual({ code: 'ACP_REFUSED', field: 'expires_at' });
    // What ACP accepts is built as before.
    expect(build({ quorum: 2, quorum_policy: { kind: 'weighted', threshold: 1.5 } })().proposal).toMatchObject({
      quorum_policy: { kind: 'weighted', threshold: 1.5 },
    });
  });

  it('given a recorded bridge, when the same post is recorded again, then nothing is appended; another post of the run is refused', () => {
    const run = apply(valueChoiceRun(), bridge()) as StartedRun;
    expect(decide(bridge(), run)).toEqual([]);
    expect(refusal(() => decide(bridge({ ...bridged(), proposal_id: '01KOTHERPR0P0SA10000000000' }), run)).code).toBe('INVALID_STATE');
  });
});

describe('ResolveValueChoice: the owner’s value choice resumes a needs-human-value-choice run (8.5)', () => {
  const bridgedRun = () => apply(valueChoiceRun(), bridge()) as StartedRun;

  it('given the owner approves, when decided, then ValueChoiceResolved names the choice and the run is decided with the value conflict as dissent; its RunRecord validates', () => {
    const run = bridgedRun();
    const events = decide(choice(), run);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: E.ValueChoiceResolved,
      event_id: `${run.run_id}:value-choice`,
      actor: OWNER,
      causation_id: `${PROPOSAL_ID}:resolution-event`,
      data: {
        outcome: 'approved',
        chosen_by: OWNER,
        note: 'auditability over speed',
        conflict_ids: ['conflict-v'],
        previous_terminal_state: 'needs-human-value-choice',
        terminal_state: 'decided-with-dissent',
      },
    });
    const after = foldRun(events, run) as StartedRun;
    expect(after.status === 'terminated' && after.terminal.terminal_state).toBe('decided-with-dissent');
    expect(JSON.stringify(after.decision?.decision_record.unresolved_dissent)).toContain('conflict-v');
    const record = buildRunRecord(after);
    expect(record.value_choice).toMatchObject({ outcome: 'approved', chosen_by: OWNER });
    expect(record.terminal?.terminal_state).toBe('decided-with-dissent');
    expect(validateRunRecord(record).problems).toEqual([]);
  });

  it('given the owner rejects, when decided, then the choice is recorded and the run stays needs-human-value-choice; its RunRecord validates', () => {
    const after = apply(bridgedRun(), choice({ outcome: 'rejected', note: 'speed matters more this quarter' })) as StartedRun;
    expect(after.status === 'terminated' && after.terminal.terminal_state).toBe('needs-human-value-choice');
    expect(after.value_choice).toMatchObject({ outcome: 'rejected', note: 'speed matters more this quarter' });
    expect(validateRunRecord(buildRunRecord(after)).problems).toEqual([]);
  });

  it('given the same resolution replayed, when decided again, then nothing is appended (idempotent)', () => {
    const after = apply(bridgedRun(), choice());
    expect(decide(choice(), after)).toEqual([]);
  });

  it.each([
    { what: 'someone else resolved the escalation', overrides: { chosen_by: 'mallory' }, code: 'NOT_AUTHORIZED_ROLE', field: 'chosen_by' },
    {
      what: 'the resolution of another proposal',
      overrides: { acp_proposal_id: '01KOTHERPR0P0SA10000000000' },
      code: 'UNKNOWN_REFERENCE',
      field: 'acp_proposal_id',
    },
    { what: 'an outcome ACP never gives a human', overrides: { outcome: 'expired' }, code: 'SCHEMA_VIOLATION', field: 'outcome' },
  ])('given $what, when decided, then $code at $field', ({ overrides, code, field }) => {
    expect(refusal(() => decide(choice(overrides), bridgedRun()))).toEqual({ code, field });
  });

  it('given an open value conflict naming another value owner, when that value owner makes the choice, then it is recorded as theirs', () => {
    const conflicts = (req: CouncilTaskRequest, round: number) =>
      conflictMapFor(req, round, [{ ...valueConflict, value_owner: 'finance-lead' }]);
    const ended = drive(startCommand(), defaultBehaviour({ conflicts })).state;
    expect(ended.status === 'terminated' && ended.terminal.terminal_state).toBe('needs-human-value-choice');
    const run = apply(ended, bridge());
    const events = decide(choice({ chosen_by: 'finance-lead' }), run);
    expect(events).toEqual([
      expect.objectContaining({
        type: E.ValueChoiceResolved,
        actor: 'finance-lead',
        data: expect.objectContaining({ chosen_by: 'finance-lead' }),
      }),
    ]);
    expect(refusal(() => decide(choice({ chosen_by: 'mallory' }), run))).toEqual({ code: 'NOT_AUTHORIZED_ROLE', field: 'chosen_by' });
  });

  it('given a run never posted to ACP, when a value choice arrives, then UNKNOWN_REFERENCE: the choice comes from its own escalation only', () => {
    expect(refusal(() => decide(choice(), valueChoiceRun())).code).toBe('UNKNOWN_REFERENCE');
  });

  it('given a decided run, or a choice already made by another resolution, when a value choice arrives, then INVALID_STATE', () => {
    const decided = drive(startCommand(), defaultBehaviour()).state;
    expect(refusal(() => decide(choice(), decided)).code).toBe('INVALID_STATE');
    const chosen = apply(bridgedRun(), choice());
    expect(refusal(() => decide(choice({ event_id: 'another-resolution' }), chosen)).code).toBe('INVALID_STATE');
  });
});

describe('a council started from an ACP proposal that asks for deliberation', () => {
  const entry = (payload: Record<string, unknown>, overrides: Record<string, unknown> = {}) => ({
    proposal_id: ORIGIN_ID,
    type: 'proposal',
    domain: 'billing',
    author: OWNER,
    payload,
    quorum: 2,
    quorum_policy: null,
    ...overrides,
  });
  const ask = { goal_contract: goalContract(), panel: [] };

  it('given a proposal whose payload carries `deliberate`, when read, then its author starts acp_<id> in the proposal’s domain, to be answered with its quorum', () => {
    const request = deliberationRequest(entry({ deliberate: ask }));
    expect(request).toMatchObject({
      run_id: councilRunIdForProposal(ORIGIN_ID),
      actor: OWNER,
      goal_contract: { domain: 'billing' },
      acp_origin: { proposal_id: ORIGIN_ID, domain: 'billing', author: OWNER, bridge: { quorum: 2 } },
    });
    expect(request?.run_id).toBe(`acp_${ORIGIN_ID}`);
  });

  it('given a payload without `deliberate`, or an observation, when read, then no council is asked for', () => {
    expect(deliberationRequest(entry({ kind: 'anything' }))).toBeNull();
    expect(deliberationRequest(entry({ deliberate: ask }, { type: 'observation' }))).toBeNull();
  });

  const start = (origin: Record<string, unknown>, actor = OWNER, domain = 'billing'): CouncilCommand => ({
    ...(startCommand({ goal: goalContract({ domain }) }) as Extract<CouncilCommand, { type: 'StartRun' }>),
    run_id: `acp_${ORIGIN_ID}`,
    actor,
    acp_origin: { proposal_id: ORIGIN_ID, domain: 'billing', author: actor, bridge: { quorum: 2 }, ...origin },
  });

  it('given an origin, when the run starts, then RunStarted and the RunRecord carry it', () => {
    const state = foldRun(decide(start({}), { status: 'empty' })) as StartedRun;
    expect(buildRunRecord(state).acp_origin).toEqual({ proposal_id: ORIGIN_ID, domain: 'billing', author: OWNER, bridge: { quorum: 2 } });
  });

  it.each([
    {
      what: 'an origin by someone else than the actor',
      command: start({ author: 'mallory' }),
      code: 'NOT_AUTHORIZED_ROLE',
      field: 'acp_origin.author',
    },
    {
      what: 'a contract in another domain than the proposal’s',
      command: start({}, OWNER, 'ops.prod'),
      code: 'NOT_AUTHORIZED_ROLE',
      field: 'goal_contract.domain',
    },
    {
      what: 'bridge options without a quorum',
      command: start({ bridge: {} }),
      code: 'SCHEMA_VIOLATION',
      field: 'acp_origin.bridge.quorum',
    },
  ])('given $what, when the run starts, then $code at $field', ({ command, code, field }) => {
    expect(refusal(() => decide(command, { status: 'empty' }))).toEqual({ code, field });
  });
});

describe('what the council service does about ACP, as a fold over the log (applyAcpReactionEvent)', () => {
  const acp = (type: string, data: Record<string, unknown>, id: string): ProposalEvent =>
    ({
      event_id: id,
      type,
      schema_version: '1',
      occurred_at: T0,
      actor: 'conclave-intake',
      causation_id: id,
      correlation_id: String(data['proposal_id']),
      data,
    }) as unknown as ProposalEvent;
  const council = (type: string, runId: string, data: Record<string, unknown>): CouncilEvent =>
    ({
      event_id: `${runId}:${type}`,
      type,
      schema_version: '1',
      occurred_at: T0,
      actor: OWNER,
      causation_id: null,
      correlation_id: runId,
      data,
    }) as unknown as CouncilEvent;
  const runId = `acp_${ORIGIN_ID}`;
  const origin = { proposal_id: ORIGIN_ID, domain: 'billing', author: OWNER, bridge: { quorum: 2 } };
  const log: (ProposalEvent | CouncilEvent)[] = [
    acp(
      PROPOSAL_EVENT_TYPES.ProposalSubmitted,
      { proposal_id: ORIGIN_ID, type: 'proposal', domain: 'billing', author: OWNER, payload: { deliberate: {} }, quorum: 2 },
      'e1',
    ),
    council(E.RunStarted, runId, { acp_origin: origin }),
    council(E.RunTerminated, runId, { decision_id: 'd-1', terminal_state: 'needs-human-value-choice' }),
    council(E.DecisionBridged, runId, { proposal_id: PROPOSAL_ID, escalated: true }),
    acp(
      PROPOSAL_EVENT_TYPES.EscalationResolved,
      { proposal_id: PROPOSAL_ID, resolution: { outcome: 'approved', resolved_by: OWNER, note: 'n' } },
      'e9',
    ),
    council(E.ValueChoiceResolved, runId, {}),
  ];

  it('given the log of an ACP-started run, when folded, then each reaction is due after its cause and cleared by its effect', () => {
    const state = emptyAcpReactions();
    const dueAfter = log.map((e) => {
      applyAcpReactionEvent(state, e);
      return Object.values(state.due).map((r) => r.kind);
    });
    expect(dueAfter).toEqual([['start-run'], [], ['bridge'], [], ['resolve-value-choice'], []]);
    expect(state).toEqual(emptyAcpReactions());
  });

  it('given the human’s resolution, when folded, then the reaction is derived from the resolution event', () => {
    const state = emptyAcpReactions();
    const due = log.slice(0, 5).flatMap((e) => applyAcpReactionEvent(state, e));
    expect(due[due.length - 1]).toEqual({
      kind: 'resolve-value-choice',
      key: `value-choice:${runId}`,
      run_id: runId,
      outcome: 'approved',
      chosen_by: OWNER,
      note: 'n',
      acp_proposal_id: PROPOSAL_ID,
      acp_event_id: 'e9',
    });
  });

  it('given a resolution of a proposal the council never bridged for a choice, when folded, then nothing is due', () => {
    const state = emptyAcpReactions();
    expect(applyAcpReactionEvent(state, log[4])).toEqual([]);
  });

  it('given a ladder default instead of a human, when folded, then the run waits no more and nothing is due', () => {
    const state = emptyAcpReactions();
    log.slice(0, 4).forEach((e) => applyAcpReactionEvent(state, e));
    applyAcpReactionEvent(state, acp(PROPOSAL_EVENT_TYPES.EscalationDefaulted, { proposal_id: PROPOSAL_ID }, 'e8'));
    expect(applyAcpReactionEvent(state, log[4])).toEqual([]);
    expect(state.awaiting).toEqual({});
  });

  it('given a run started from ACP that ends without a DecisionRecord, when folded, then nothing is posted back', () => {
    const state = emptyAcpReactions();
    log.slice(0, 2).forEach((e) => applyAcpReactionEvent(state, e));
    expect(applyAcpReactionEvent(state, council(E.RunTerminated, runId, { decision_id: null }))).toEqual([]);
    expect(state).toEqual(emptyAcpReactions());
  });
});

describe('replay reproduces the state (DESIGN 2)', () => {
  it('given a bridged run and its value choice, when folded event by event or at once, then the states are equal', () => {
    const run = valueChoiceRun();
    const withBridge = decide(bridge(), run);
    const afterBridge = foldRun(withBridge, run);
    const events = [...withBridge, ...decide(choice(), afterBridge)];
    const oneByOne = events.reduce<CouncilRunState>((s, e) => evolveRun(s, e), run);
    expect(oneByOne).toEqual(foldRun(events, run));
  });
});
