import { RecordOutcome, RecordStructuredOutcome } from './commands';
import { COUNCIL_EVENT_TYPES as E } from './contracts';
import { DecisionRecord, NO_DECISION, SYNTHESIS } from './decision-record';
import { envelope } from './decide-support';
import { CouncilError } from './errors';
import { parseStructuredOutcome } from './evaluation/outcomes';
import { CouncilEvent } from './events';
import { CouncilRunState, RunData, StartedRun } from './state';
import { instantMs, record, str, strings } from './validation';

/* Spec 8.7 and 15.4, outcome evaluation: what happened after the decision, recorded on the run. */

/** Later outcome feedback (8.7, 15.4): appended to a finished (or running) run. */
export function decideRecordOutcome(command: RecordOutcome, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  if (command.actor !== run.goal_contract.decision_owner)
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner records outcomes of its decision', 'actor');
  const o = record(command.outcome, 'outcome');
  const outcome = {
    outcome_id: str(o, 'outcome_id', 'outcome'),
    observed_at: str(o, 'observed_at', 'outcome'),
    summary: str(o, 'summary', 'outcome'),
    source: str(o, 'source', 'outcome'),
    evidence_refs: strings(o, 'evidence_refs', 'outcome', { optional: true }),
  };
  instantMs(outcome.observed_at, 'outcome.observed_at');
  const eventId = command.event_id ?? `${run.run_id}:outcome:${outcome.outcome_id}`;
  if (run.applied_event_ids[eventId]) return [];
  if (run.outcomes.some((x) => x.outcome_id === outcome.outcome_id))
    throw new CouncilError('DUPLICATE_ARTIFACT', `outcome ${outcome.outcome_id} exists`, 'outcome.outcome_id');
  return [envelope(run.run_id, E.OutcomeRecorded, eventId, command.now, command.actor, null, outcome)];
}

/** Expected outcomes of the candidates the decision selected or incorporated (8.2): what an outcome reports on. */
function decidedExpectations(run: RunData, decision: DecisionRecord): string[] {
  const picked = [
    ...(decision.selected_path === NO_DECISION || decision.selected_path === SYNTHESIS ? [] : [decision.selected_path]),
    ...decision.incorporated,
  ];
  return [...new Set(picked.flatMap((id) => run.candidates[id]?.candidate.expected_outcomes ?? []))];
}

/**
 * council:L5 outcome feedback (8.7, 15.4): a structured outcome linked to the run's decision, by
 * its decision owner or an evaluator the policy names; `recorded_by` is whoever records it (a
 * body naming someone else is refused). It becomes OutcomeRecorded with the structured outcome,
 * which the capability projection and calibration read.
 */
export function decideRecordStructuredOutcome(command: RecordStructuredOutcome, state: CouncilRunState): CouncilEvent[] {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const run: StartedRun = state;
  // Who may record comes first: anyone else learns nothing of the run (decided or not, its decision id).
  if (command.actor !== run.goal_contract.decision_owner && !(run.policy.evaluators ?? []).includes(command.actor))
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner or an authorised evaluator records outcomes', 'recorded_by');
  const decision = run.decision?.decision_record;
  if (!decision) throw new CouncilError('INVALID_STATE', 'the run has no DecisionRecord to record an outcome of', 'run_id');
  const body = record(command.outcome, 'outcome');
  if (body['recorded_by'] !== undefined && body['recorded_by'] !== command.actor)
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      `the outcome is recorded by ${command.actor}, not in another's name`,
      'outcome.recorded_by',
    );
  const structured = parseStructuredOutcome(
    { ...body, recorded_by: command.actor },
    { decision, expected_outcomes: decidedExpectations(run, decision), evaluators: run.policy.evaluators ?? [] },
  );
  const eventId = command.event_id ?? `${run.run_id}:outcome:${structured.outcome_id}`;
  if (run.applied_event_ids[eventId]) return [];
  if (run.outcomes.some((x) => x.outcome_id === structured.outcome_id))
    throw new CouncilError('DUPLICATE_ARTIFACT', `outcome ${structured.outcome_id} exists`, 'outcome.outcome_id');
  return [
    envelope(run.run_id, E.OutcomeRecorded, eventId, command.now, command.actor, null, {
      outcome_id: structured.outcome_id,
      observed_at: structured.observed_at,
      summary: structured.summary,
      source: structured.source_kind,
      evidence_refs: structured.evidence_refs,
      structured,
    }),
  ];
}
