import { COUNCIL_EVENT_SCHEMA_VERSION } from './contracts';
import { CouncilError } from './errors';
import { CouncilEvent, CouncilEventEnvelope, Usage } from './events';
import { ActiveRun, CouncilRunState, RunData, StartedRun, TaskRecord } from './state';
import { num, record } from './validation';

/* What every decider of the run's commands shares: the envelope, the run and task it may act on. */

export function envelope<T extends CouncilEvent['type'], D>(
  runId: string,
  type: T,
  eventId: string,
  now: string,
  actor: string,
  causation: string | null,
  data: D,
): CouncilEventEnvelope<T, D> {
  return {
    event_id: eventId,
    type,
    schema_version: COUNCIL_EVENT_SCHEMA_VERSION,
    occurred_at: now,
    actor,
    causation_id: causation,
    correlation_id: runId,
    data,
  };
}

export function requireRunning(state: CouncilRunState): ActiveRun {
  const run = requireStarted(state);
  if (run.status === 'terminated') throw new CouncilError('INVALID_STATE', `run is terminated (${run.terminal.terminal_state})`);
  return run;
}

/**
 * A run that exists, running or ended. A command that only some roles may send checks the role on
 * it before `requireRunning`, so a refusal tells someone without the role nothing about the run.
 */
export function requireStarted(state: CouncilRunState): StartedRun {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  return state;
}

export function parseUsage(value: unknown): Usage | undefined {
  if (value === undefined || value === null) return undefined;
  const o = record(value, 'usage');
  const u: Usage = {};
  if (o['cost'] !== undefined) u.cost = num(o, 'cost', 'usage', { min: 0 });
  // Tokens are counted, not measured: a fraction is a member's error, as max_tokens is an integer.
  if (o['tokens'] !== undefined) u.tokens = num(o, 'tokens', 'usage', { min: 0, integer: true });
  return u;
}

/**
 * The member's command was recorded already (its task settled by this very event id), whatever
 * the run has become since: a resend after a lost verdict is a no-op even once the answer, or a
 * later one, has ended the run; else the member would be told its recorded answer was refused.
 */
export function settledBefore(state: CouncilRunState, taskId: string, memberId: string | undefined, eventId: string): boolean {
  if (state.status === 'empty') return false;
  const task = state.tasks[taskId];
  return (
    task !== undefined && task.status !== 'issued' && task.settled_by === eventId && (memberId === undefined || task.member_id === memberId)
  );
}

/** A task the command may settle: exists, is the member's, is still open and in time. */
export function openTask(run: RunData, taskId: string, memberId: string | undefined, eventId: string): TaskRecord | null {
  const task = run.tasks[taskId];
  if (!task) throw new CouncilError('TASK_NOT_FOUND', `no task ${taskId}`, 'task_id');
  if (memberId !== undefined && task.member_id !== memberId)
    throw new CouncilError('NOT_TASK_ASSIGNEE', `task ${taskId} belongs to another member`, 'member_id');
  if (task.status !== 'issued') {
    // A redelivered reply (same event id) is a no-op, not an error.
    if (task.settled_by === eventId) return null;
    throw new CouncilError('TASK_ALREADY_SETTLED', `task ${taskId} is ${task.status}`, 'task_id');
  }
  return task;
}

export function requireOwnerOrChair(run: RunData, actor: string): 'owner' | 'chair' {
  if (actor === run.goal_contract.decision_owner) return 'owner';
  if (run.chair_order.includes(actor)) return 'chair';
  throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner or the chair decides on the GoalContract', 'actor');
}
