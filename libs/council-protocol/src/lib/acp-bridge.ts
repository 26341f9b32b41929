import { AcpError, checkSubmission, parseProposeRequest } from '@conclave/acp-protocol';
import { CouncilError } from './errors';
import { runDomain } from './goal-contract';
import { StartedRun } from './state';
import { unresolvedValueConflicts } from './conflict-map';
import { latestConflictMap } from './run-queries';
import { AcpOrigin } from './events';
import { fail, isRecord, join, record, str } from './validation';

/**
 * The bridge from a Council decision to ACP (an extension: neither spec requires it). A decided
 * run becomes two ACP entries in the GoalContract's domain: an `observation` that records the
 * DecisionRecord as a fact of the log (ACP auto-resolves observations), and a `proposal` whose
 * payload is the decision and its actions, `caused_by` that observation, so the agent fleet votes
 * on the council's recommendation under the domain's quorum policy. A run that ended
 * `needs-human-value-choice` also asks for the proposal to be escalated to its decision owner.
 *
 * Who posts: the council service, as its own registered participant (`author`), on the request
 * of the decision owner (`requested_by`, in the payload). ACP authenticates the service; the
 * owner's authority is checked by the Council before anything is posted, and recorded in the
 * run (DecisionBridged). Pure: ids, times and identities are inputs.
 */
/** The ACP wire schema the entries are written in (RFC 12.2). */
const ACP_WIRE_SCHEMA_VERSION = '1.0';

/** Payload kinds of the two entries: what a reader of ACP dispatches on. */
export const COUNCIL_DECISION_RECORD_KIND = 'council-decision-record';
export const COUNCIL_DECISION_KIND = 'council-decision';

export interface AcpBridgeIds {
  /** ULIDs of the two ACP entries; derive them from the run so a retry posts the same entries. */
  observation_id: string;
  proposal_id: string;
}

export interface AcpBridgeOptions {
  /** The proposal's quorum (RFC 12.2). */
  quorum: number;
  expires_at?: string | null;
  quorum_policy?: { kind: string; threshold?: number };
  /** Earlier ACP entries that asked for this deliberation (lineage). */
  caused_by?: string[];
}

/** Who the entries are by: the ACP author (the council service) and the owner who asked for them. */
export interface AcpBridgeParties {
  author: string;
  requested_by: string;
}

export interface AcpBridgeEntries {
  observation: Record<string, unknown>;
  proposal: Record<string, unknown>;
  /** Set for a value choice only the decision owner can make: the escalation request. */
  escalation: { reason: string; requested_by: string } | null;
}

/** Checks the bridge options of a request (`path` prefixes the field names). */
export function parseAcpBridgeOptions(input: unknown, path = ''): AcpBridgeOptions {
  const o = record(input ?? {}, path);
  const quorum = o['quorum'];
  if (!(typeof quorum === 'number' && Number.isInteger(quorum) && quorum >= 1)) fail(join(path, 'quorum'), 'must be an integer >= 1');
  const options: AcpBridgeOptions = { quorum };
  const expires = o['expires_at'];
  if (expires !== undefined && expires !== null) {
    if (typeof expires !== 'string' || Number.isNaN(Date.parse(expires))) fail(join(path, 'expires_at'), 'must be an ISO 8601 instant');
    options.expires_at = expires;
  }
  const policy = o['quorum_policy'];
  if (policy !== undefined && policy !== null) {
    const p = record(policy, join(path, 'quorum_policy'));
    const kind = str(p, 'kind', join(path, 'quorum_policy'));
    const threshold = p['threshold'];
    if (threshold !== undefined && typeof threshold !== 'number') fail(join(join(path, 'quorum_policy'), 'threshold'), 'must be a number');
    options.quorum_policy = threshold === undefined ? { kind } : { kind, threshold };
  }
  const caused = o['caused_by'];
  if (caused !== undefined) {
    if (!(Array.isArray(caused) && caused.every((x) => typeof x === 'string' && x !== '')))
      fail(join(path, 'caused_by'), 'must be a list of ACP entry ids');
    options.caused_by = [...caused];
  }
  return options;
}

/** Checks the origin a StartRun names (the ACP proposal that asked for the deliberation). */
export function parseAcpOrigin(input: unknown, path = 'acp_origin'): AcpOrigin {
  const o = record(input, path);
  return {
    proposal_id: str(o, 'proposal_id', path),
    domain: str(o, 'domain', path),
    author: str(o, 'author', path),
    bridge: parseAcpBridgeOptions(o['bridge'], join(path, 'bridge')),
  };
}

/** The run's DecisionRecord, or INVALID_STATE: only an ended run with a decision is posted. */
function bridgeableDecision(run: StartedRun) {
  if (run.status !== 'terminated') throw new CouncilError('INVALID_STATE', 'the run has not ended', 'run_id');
  const decision = run.decision?.decision_record;
  if (!decision) throw new CouncilError('INVALID_STATE', `the run ended ${run.terminal.terminal_state} without a DecisionRecord`, 'run_id');
  return { decision, terminal: run.terminal };
}

/**
 * RFC 5.3 carried into ACP: a run whose decision owner deliberated in it (on its panel, or as a
 * chair) is not posted. ACP takes the entries from the council service as their author, so the
 * owner could otherwise endorse, alone, a decision it helped write: an author's own vote, under
 * another name. NOT_AUTHORIZED_ROLE at `goal_contract.decision_owner`.
 */
export function requireOwnerApartFromPanel(run: StartedRun): void {
  const owner = run.goal_contract.decision_owner;
  if (run.panel.some((m) => m.member_id === owner) || run.chair_order.includes(owner))
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `${owner}, the decision owner, sat on the panel: its decision is not posted to ACP, where ${owner} could approve what it helped write (RFC 5.3)`,
      'goal_contract.decision_owner',
    );
}

/** Does posting this run ask ACP for an escalation to its owner (an open value choice)? */
export function bridgeEscalates(run: StartedRun): boolean {
  return run.status === 'terminated' && run.terminal.terminal_state === 'needs-human-value-choice' && run.value_choice === undefined;
}

/** The lineage of the observation: the ACP proposal that started the run, then any the request names. */
export function bridgeCauses(run: StartedRun, options: AcpBridgeOptions): string[] {
  return [...new Set([...(run.acp_origin ? [run.acp_origin.proposal_id] : []), ...(options.caused_by ?? [])])];
}

export function acpBridgeEntries(
  run: StartedRun,
  ids: AcpBridgeIds,
  options: AcpBridgeOptions,
  parties: AcpBridgeParties,
): AcpBridgeEntries {
  const { decision, terminal } = bridgeableDecision(run);
  requireOwnerApartFromPanel(run);
  const checked = parseAcpBridgeOptions(options);
  const domain = runDomain(run.goal_contract);
  const owner = run.goal_contract.decision_owner;
  const council = {
    run_id: run.run_id,
    run_record_id: `${run.run_id}:run-record`,
    decision_id: decision.decision_id,
    goal_contract_id: run.goal_contract.goal_contract_id,
    terminal_state: terminal.terminal_state,
    decision_owner: owner,
    requested_by: parties.requested_by,
    ...(run.acp_origin ? { acp_origin_proposal_id: run.acp_origin.proposal_id } : {}),
  };
  const created_at = run.decision?.recorded_at ?? terminal.at;
  const causes = bridgeCauses(run, checked);
  const observation = {
    schema_version: ACP_WIRE_SCHEMA_VERSION,
    proposal_id: ids.observation_id,
    type: 'observation',
    domain,
    author: parties.author,
    created_at,
    expires_at: null,
    quorum: 1,
    payload: { kind: COUNCIL_DECISION_RECORD_KIND, council, decision_record: decision },
    ...(causes.length ? { caused_by: causes } : {}),
  };
  const proposal = {
    schema_version: ACP_WIRE_SCHEMA_VERSION,
    proposal_id: ids.proposal_id,
    type: 'proposal',
    domain,
    author: parties.author,
    created_at,
    expires_at: checked.expires_at ?? null,
    quorum: checked.quorum,
    ...(checked.quorum_policy ? { quorum_policy: checked.quorum_policy } : {}),
    payload: {
      kind: COUNCIL_DECISION_KIND,
      council,
      question: run.goal_contract.question,
      decision: decision.decision,
      selected_path: decision.selected_path,
      actions: decision.actions,
      stop_loss_conditions: decision.stop_loss_conditions,
      reversal_signals: decision.reversal_signals,
      unresolved_dissent: decision.unresolved_dissent,
      confidence: decision.confidence,
    },
    caused_by: [ids.observation_id],
  };
  const conflicts = unresolvedValueConflicts(latestConflictMap(run)).map((c) => c.conflict_id);
  // ACP takes an escalation from its signer only: the council service asks, naming the owner.
  const escalation = bridgeEscalates(run)
    ? {
        reason: `needs-human-value-choice: the council leaves a value choice to ${owner}${conflicts.length ? ` (${conflicts.join(', ')})` : ''}`,
        requested_by: parties.author,
      }
    : null;
  requireAcpAccepts(observation);
  requireAcpAccepts(proposal);
  return { observation, proposal, escalation };
}

/**
 * ACP's own rules for an entry that need no ACP state (its wire validation, and the stateless
 * rules of a submission), applied before anything is posted: the proposal is posted after the
 * observation it is caused by, and a proposal refused then would leave the observation in ACP
 * with no bridge recorded for it. ACP_REFUSED at the field ACP would name. What depends on ACP's
 * state (grants, causes, the domain's policy document) meets the observation first, alike.
 */
function requireAcpAccepts(entry: Record<string, unknown>): void {
  try {
    const request = parseProposeRequest(entry);
    checkSubmission({ ...request, proposal_id: entry['proposal_id'] as string });
  } catch (err) {
    if (!(err instanceof AcpError)) throw err;
    throw new CouncilError('ACP_REFUSED', `ACP would refuse the ${String(entry['type'])}: ${err.code}: ${err.message}`, err.field);
  }
}

/** Who may make a run's value choice (8.5): its decision owner, or a value owner an open value conflict names. */
export function valueChoiceOwners(run: StartedRun): string[] {
  const owners = unresolvedValueConflicts(latestConflictMap(run))
    .map((c) => c.value_owner)
    .filter((o): o is string => o !== undefined);
  return [...new Set([run.goal_contract.decision_owner, ...owners])];
}

/** The payload key of an ACP proposal that asks for a deliberation (docs/council-conformance.md). */
export const DELIBERATION_PAYLOAD_KEY = 'deliberate';

/** The run an ACP proposal asking for deliberation starts: its id derives from the proposal's, so a replay starts it once. */
export function councilRunIdForProposal(proposalId: string): string {
  return `acp_${proposalId.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/** What a deliberation request carries once read from the ACP proposal (the StartRun body, unchecked). */
export interface DeliberationRequest {
  run_id: string;
  actor: string;
  goal_contract: unknown;
  panel: unknown;
  policy?: unknown;
  /** Unchecked here: StartRun checks it (parseAcpOrigin) and refuses with the field. */
  acp_origin: { proposal_id: string; domain: string; author: string; bridge: unknown };
}

/** The ACP proposal fields a deliberation request is read from (ProposalSubmitted's data). */
export interface AcpEntry {
  proposal_id: string;
  type: string;
  domain: string;
  author: string;
  payload: Record<string, unknown>;
  quorum: number;
  quorum_policy?: { kind: string; threshold?: number } | null;
  expires_at?: string | null;
}

/**
 * An ACP `proposal` whose payload carries `deliberate: {goal_contract, panel, policy?, bridge?}`
 * asks for a council: the proposal's author is the run's decision owner, the run decides in the
 * proposal's domain (a contract without a domain gets it), and the decision goes back to ACP
 * with the proposal's quorum and quorum policy unless `bridge` says otherwise. Anything else: null.
 */
export function deliberationRequest(entry: AcpEntry): DeliberationRequest | null {
  if (entry.type !== 'proposal' || !isRecord(entry.payload)) return null;
  const ask = entry.payload[DELIBERATION_PAYLOAD_KEY];
  if (ask === undefined) return null;
  const o = isRecord(ask) ? ask : {};
  const contract = o['goal_contract'];
  const goal_contract = isRecord(contract) && contract['domain'] === undefined ? { ...contract, domain: entry.domain } : contract;
  const bridge =
    o['bridge'] !== undefined
      ? o['bridge']
      : {
          quorum: entry.quorum,
          ...(entry.quorum_policy ? { quorum_policy: entry.quorum_policy } : {}),
        };
  return {
    run_id: councilRunIdForProposal(entry.proposal_id),
    actor: entry.author,
    goal_contract,
    panel: o['panel'],
    ...(o['policy'] !== undefined ? { policy: o['policy'] } : {}),
    acp_origin: { proposal_id: entry.proposal_id, domain: entry.domain, author: entry.author, bridge },
  };
}
