import { ExpireTask, RecordRefusedAnswer, ReportTaskFailure } from './commands';
import { COUNCIL_EVENT_TYPES as E } from './contracts';
import { envelope, openTask, parseUsage, requireRunning, settledBefore } from './decide-support';
import { CouncilError } from './errors';
import { CouncilEvent } from './events';
import { CouncilRunState } from './state';
import { fail, instantMs } from './validation';

/*
 * Spec 18, failure and degraded operation: a member's reported failure, a refused answer, and a
 * task past its deadline are facts of the run, each with its spend (17.1).
 */

export function decideReportTaskFailure(command: ReportTaskFailure, state: CouncilRunState): CouncilEvent[] {
  const eventId = command.event_id ?? `${command.task_id}:failed`;
  if (settledBefore(state, command.task_id, command.member_id, eventId)) return [];
  const run = requireRunning(state);
  const task = openTask(run, command.task_id, command.member_id, eventId);
  if (task === null) return [];
  const usage = parseUsage(command.usage);
  const data = {
    member_id: task.member_id,
    task_id: task.task_id,
    round: task.round,
    stage: task.stage,
    reason: 'reported-failure' as const,
    ...(command.detail ? { detail: command.detail } : {}),
    ...(usage ? { usage } : {}),
  };
  return [envelope(run.run_id, E.MemberFailed, eventId, command.now, task.member_id, task.task_id, data)];
}

/**
 * Refusals recorded per task; past this a member's further wrong answers are not recorded one by
 * one (no log flooding), but any spend they report still is (RefusedAnswerSpendRecorded).
 */
export const MAX_REFUSALS_PER_TASK = 5;

/**
 * A refused answer is a fact of the run (checklist 14): the RunRecord keeps it, and its spend
 * counts against the budget (17.1), whether the task is still open, timed out or answered by a
 * later correction. The event id counts the task's refusals, so a retried append is dropped.
 *
 * Past MAX_REFUSALS_PER_TASK the refusal is no longer recorded: an answer that reported spend
 * appends only that spend (a small event with no error text), and one that spent nothing appends
 * nothing (INVALID_STATE, as before). The log stays bounded where it costs nothing to flood it,
 * and each record past the cap brings the run closer to its cost, token or time budget.
 */
export function decideRecordRefusedAnswer(command: RecordRefusedAnswer, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const task = run.tasks[command.task_id];
  if (!task) throw new CouncilError('TASK_NOT_FOUND', `no task ${command.task_id}`, 'task_id');
  if (task.member_id !== command.member_id)
    throw new CouncilError('NOT_TASK_ASSIGNEE', `task ${command.task_id} belongs to another member`, 'member_id');
  if (command.event_id !== undefined && run.applied_event_ids[command.event_id]) return [];
  const e = command.error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string') fail('error', 'must be {code, message, field?}');
  const usage = parseUsage(command.usage);
  const count = run.refusals.filter((r) => r.task_id === task.task_id).length;
  const where = { task_id: task.task_id, member_id: task.member_id, round: task.round, stage: task.stage };
  if (count >= MAX_REFUSALS_PER_TASK) {
    if (!usage || ((usage.cost ?? 0) === 0 && (usage.tokens ?? 0) === 0))
      throw new CouncilError('INVALID_STATE', `task ${task.task_id} already has ${count} refused answers`, 'task_id');
    const pastCap = (task.spends_past_refusal_cap ?? 0) + 1;
    return [
      envelope(
        run.run_id,
        E.RefusedAnswerSpendRecorded,
        command.event_id ?? `${task.task_id}:refused-spend:${pastCap}`,
        command.now,
        task.member_id,
        task.task_id,
        { ...where, past_cap: pastCap, usage },
      ),
    ];
  }
  const data = {
    ...where,
    error: { code: e.code, message: e.message, ...(e.field !== undefined ? { field: e.field } : {}) },
    ...(usage ? { usage } : {}),
  };
  return [
    envelope(
      run.run_id,
      E.TaskAnswerRefused,
      command.event_id ?? `${task.task_id}:refused:${count + 1}`,
      command.now,
      task.member_id,
      task.task_id,
      data,
    ),
  ];
}

/** A per-stage timeout from outside (a sweeper); same event id as the controller's, so never twice. */
export function decideExpireTask(command: ExpireTask, state: CouncilRunState): CouncilEvent[] {
  const run = requireRunning(state);
  const eventId = command.event_id ?? `${command.task_id}:timed-out`;
  const task = openTask(run, command.task_id, undefined, eventId);
  if (task === null) return [];
  if (instantMs(command.now, 'now') < instantMs(task.deadline, 'deadline'))
    throw new CouncilError('TASK_NOT_DUE', `task ${task.task_id} is due at ${task.deadline}`, 'now');
  const data = { member_id: task.member_id, task_id: task.task_id, round: task.round, stage: task.stage, reason: 'timeout' as const };
  return [envelope(run.run_id, E.MemberFailed, eventId, command.now, run.policy.controller_id, task.task_id, data)];
}
