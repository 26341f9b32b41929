import { parseAcpOrigin } from './acp-bridge';
import { StartRun } from './commands';
import { COUNCIL_EVENT_TYPES as E, levelNumber } from './contracts';
import { envelope } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent, RunStarted } from './events';
import { parseGoalContract, runDomain } from './goal-contract';
import { diversityProfile, holdsRole, memberRoles, parsePanel } from './member-descriptor';
import { parseCouncilPolicy } from './policy';
import { blindSurfaceWordNamedBy } from './review-and-anonymity';
import { CouncilRunState } from './state';
import { fail, join, stableJson } from './validation';

/**
 * Spec 9, steps 0 and 1: align the GoalContract and assemble the panel and its diversity profile
 * (5, 6, 7): the decision owner starts the run, the controller is never a member (7.1), the
 * proposers make a quorum, and the chair order names members holding the chair role.
 */
export function decideStartRun(command: StartRun, state: CouncilRunState): CouncilEvent[] {
  if (state.status !== 'empty') {
    if (command.event_id !== undefined && state.applied_event_ids[command.event_id]) return [];
    throw new CouncilError('RUN_ALREADY_STARTED', `run ${state.run_id} already started`);
  }
  if (typeof command.run_id !== 'string' || !/^[A-Za-z0-9_.:-]+$/.test(command.run_id))
    fail('run_id', 'must be a non-empty id of [A-Za-z0-9_.:-]');
  if (typeof command.seed !== 'string' || command.seed === '') fail('seed', 'must be a non-empty string');
  const goal_contract = parseGoalContract(command.goal_contract, 'goal_contract');
  const panel = parsePanel(command.panel, 'panel');
  // Here, not in parsePanel: a rule for new runs, so RunRecords validated offline stay valid.
  panel.forEach((m, i) => {
    const word = blindSurfaceWordNamedBy(m.member_id);
    if (word !== undefined)
      fail(
        join(join('panel', i), 'member_id'),
        `must not be a word of the blind surface's field names or values (it names "${word}", which scrubbing would rewrite)`,
      );
  });
  const policy = parseCouncilPolicy(command.policy, 'policy');
  // The run is the decision owner's: nobody starts a council in someone else's name.
  if (command.actor !== goal_contract.decision_owner) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `only the decision owner (${goal_contract.decision_owner}) starts a run on this GoalContract`,
      'goal_contract.decision_owner',
    );
  }
  // Controller is not Chair (7.1): the controller is never a panel member.
  if (panel.some((m) => m.member_id === policy.controller_id)) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'the controller must not be a panel member', 'policy.controller_id');
  }
  const proposers = panel.filter((m) => holdsRole(m, 'proposer'));
  if (proposers.length < policy.min_quorum) {
    throw new CouncilError('BELOW_QUORUM', `${proposers.length} proposer(s) for a quorum of ${policy.min_quorum}`, 'panel');
  }
  if (levelNumber(policy.level) >= 4 && goal_contract.domain === undefined)
    fail('goal_contract.domain', `${policy.level} scopes capability by domain: the GoalContract needs one`);
  const acp_origin = command.acp_origin === undefined ? undefined : parseAcpOrigin(command.acp_origin);
  if (acp_origin) {
    // The proposal's author asked, and ACP checked its grant in the proposal's domain: the run
    // is that author's and decides there, so the bridge never posts where the author could not.
    if (acp_origin.author !== command.actor)
      throw new CouncilError('NOT_AUTHORIZED_ROLE', 'a council started from ACP is started by the proposal’s author', 'acp_origin.author');
    if (runDomain(goal_contract) !== acp_origin.domain)
      throw new CouncilError(
        'NOT_AUTHORIZED_ROLE',
        `a council started from an ACP proposal in ${acp_origin.domain} decides in that domain`,
        'goal_contract.domain',
      );
  }
  const selection = command.chair_selection;
  if (selection !== undefined && policy.chair_order.length > 0)
    fail('policy.chair_order', 'a chair selection policy and an explicit chair_order exclude each other');
  if (selection !== undefined && selection.chair_order.length === 0) throw new CouncilError('SCHEMA_VIOLATION', selection.reason, 'panel');
  const chairs = selection
    ? selection.chair_order
    : policy.chair_order.length
      ? policy.chair_order
      : panel.filter((m) => holdsRole(m, 'chair')).map((m) => m.member_id);
  chairs.forEach((id, i) => {
    const m = panel.find((x) => x.member_id === id);
    if (!m || !holdsRole(m, 'chair'))
      throw new CouncilError('NOT_AUTHORIZED_ROLE', `${id} is not a panel member holding the chair role`, `policy.chair_order[${i}]`);
  });
  if (chairs.length === 0) throw new CouncilError('SCHEMA_VIOLATION', 'the panel needs a member holding the chair role', 'panel');
  const runId = command.run_id;
  const started = envelope(runId, E.RunStarted, command.event_id ?? `${runId}:started`, command.now, command.actor, null, {
    run_id: runId,
    goal_contract,
    panel,
    policy: { ...policy, chair_order: chairs },
    seed: command.seed,
    ...(selection ? { chair_selection: selection } : {}),
    ...(acp_origin ? { acp_origin } : {}),
  });
  const roles = Object.fromEntries(panel.map((m) => [m.member_id, [...memberRoles(m)]]));
  const assembled = envelope(runId, E.PanelAssembled, `${runId}:panel-assembled`, command.now, policy.controller_id, started.event_id, {
    diversity_profile: diversityProfile(panel),
    chair_order: chairs,
    roles,
  });
  return [started, assembled];
}

/**
 * Is the stored run the one this RunStarted would start? A start's event ids derive from the run
 * id alone, so the log takes any start of an existing run for a retry of it: only the same request
 * (actor, GoalContract, panel, policy, ACP origin) is one. What the service draws for each attempt
 * (the seed, and the chair order a chair selection derives from it) is not compared.
 */
export function isSameStart(state: CouncilRunState, started: RunStarted): boolean {
  if (state.status === 'empty') return false;
  const first = state.goal_contract_revisions[0];
  const policy = (p: Record<string, unknown>) => ({ ...p, chair_order: undefined });
  const stored = {
    actor: first?.revised_by,
    goal_contract: first?.goal_contract,
    panel: state.panel,
    policy: policy(state.policy as unknown as Record<string, unknown>),
    acp_origin: state.acp_origin,
  };
  const asked = {
    actor: started.actor,
    goal_contract: started.data.goal_contract,
    panel: started.data.panel,
    policy: policy(started.data.policy as unknown as Record<string, unknown>),
    acp_origin: started.data.acp_origin,
  };
  return stableJson(stored) === stableJson(asked);
}
