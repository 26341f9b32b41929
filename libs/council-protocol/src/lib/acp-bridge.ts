import { CouncilError } from './errors';
import { runDomain } from './goal-contract';
import { StartedRun } from './state';
import { unresolvedValueConflicts } from './conflict-map';
import { latestConflictMap } from './run-queries';

/**
 * The bridge from a Council decision to ACP (an extension: neither spec requires it). A decided
 * run becomes two ACP entries in the GoalContract's domain: an `observation` that records the
 * DecisionRecord as a fact of the log (ACP auto-resolves observations), and a `proposal` whose
 * payload is the decision and its actions, `caused_by` that observation, so the agent fleet votes
 * on the council's recommendation under the domain's quorum policy. A run that ended
 * `needs-human-value-choice` also asks for the proposal to be escalated to its decision owner.
 * Pure: ids and times are inputs.
 */
/** The ACP wire schema the entries are written in (RFC 12.2). */
const ACP_WIRE_SCHEMA_VERSION = '1.0';

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

export interface AcpBridgeEntries {
  observation: Record<string, unknown>;
  proposal: Record<string, unknown>;
  /** Set for a value choice only the decision owner can make: the escalation request. */
  escalation: { reason: string; requested_by: string } | null;
}

export function acpBridgeEntries(run: StartedRun, ids: AcpBridgeIds, options: AcpBridgeOptions): AcpBridgeEntries {
  if (run.status !== 'terminated') throw new CouncilError('INVALID_STATE', 'the run has not ended', 'run_id');
  const decision = run.decision?.decision_record;
  if (!decision) throw new CouncilError('INVALID_STATE', `the run ended ${run.terminal.terminal_state} without a DecisionRecord`, 'run_id');
  if (!(Number.isInteger(options.quorum) && options.quorum >= 1))
    throw new CouncilError('SCHEMA_VIOLATION', 'must be an integer >= 1', 'quorum');
  const domain = runDomain(run.goal_contract);
  const owner = run.goal_contract.decision_owner;
  const council = {
    run_id: run.run_id,
    run_record_id: `${run.run_id}:run-record`,
    decision_id: decision.decision_id,
    goal_contract_id: run.goal_contract.goal_contract_id,
    terminal_state: run.terminal.terminal_state,
  };
  const created_at = run.decision?.recorded_at ?? run.terminal.at;
  const observation = {
    schema_version: ACP_WIRE_SCHEMA_VERSION,
    proposal_id: ids.observation_id,
    type: 'observation',
    domain,
    author: owner,
    created_at,
    expires_at: null,
    quorum: 1,
    payload: { kind: 'council-decision-record', council, decision_record: decision },
    ...(options.caused_by?.length ? { caused_by: options.caused_by } : {}),
  };
  const proposal = {
    schema_version: ACP_WIRE_SCHEMA_VERSION,
    proposal_id: ids.proposal_id,
    type: 'proposal',
    domain,
    author: owner,
    created_at,
    expires_at: options.expires_at ?? null,
    quorum: options.quorum,
    ...(options.quorum_policy ? { quorum_policy: options.quorum_policy } : {}),
    payload: {
      kind: 'council-decision',
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
  const escalation =
    run.terminal.terminal_state === 'needs-human-value-choice'
      ? {
          reason: `needs-human-value-choice: the council leaves a value choice to ${owner}${conflicts.length ? ` (${conflicts.join(', ')})` : ''}`,
          requested_by: owner,
        }
      : null;
  return { observation, proposal, escalation };
}
