import { CouncilCommand } from './commands';
import { COUNCIL_COMMAND_TYPES as C } from './contracts';
import { decideRecordDecisionBridge, decideResolveValueChoice } from './decide-acp-bridge';
import { decideDeclineFrameChallenge, decideReviseGoalContract } from './decide-frame-challenge';
import { decideInterruptRun } from './decide-human-interrupt';
import { decideExpireTask, decideRecordRefusedAnswer, decideReportTaskFailure } from './decide-member-failures';
import { decideSubmitTaskResult } from './decide-member-answers';
import { decideRecordOutcome, decideRecordStructuredOutcome } from './decide-outcomes';
import { decideStartRun } from './decide-start-run';
import { CouncilError } from './errors';
import { CouncilEvent } from './events';
import { CouncilRunState } from './state';
import { instantMs } from './validation';

/*
 * The run's decider. Each command's rule lives in the file of the spec section that states it:
 *   decide-start-run        9 (steps 0-1), 5-7: GoalContract and panel
 *   decide-member-answers   10 independent proposal, 11 review and anonymity, 8.5 conflict map,
 *                           13 frame check, 12 targeted revision, 14 chair and synthesis
 *   decide-member-failures  18 failure and degraded operation
 *   decide-frame-challenge  13 frame challenge, 7.1 Controller is not Chair
 *   decide-human-interrupt  17.1 hard limits: the human interrupt
 *   decide-outcomes         8.7, 15.4 outcome evaluation
 *   decide-acp-bridge       the ACP bridge and the owner's value choice (8.5)
 * What the controller does on its own (issue tasks, close stages and rounds) is in controller.ts.
 */
export * from './commands';
export { MAX_REFUSALS_PER_TASK, decideExpireTask, decideRecordRefusedAnswer, decideReportTaskFailure } from './decide-member-failures';
export { decideDeclineFrameChallenge, decideReviseGoalContract } from './decide-frame-challenge';
export { decideInterruptRun } from './decide-human-interrupt';
export { decideRecordDecisionBridge, decideResolveValueChoice } from './decide-acp-bridge';
export { decideRecordOutcome, decideRecordStructuredOutcome } from './decide-outcomes';
export { decideStartRun, isSameStart } from './decide-start-run';
export { decideSubmitTaskResult } from './decide-member-answers';

/**
 * The decider for everything that arrives from outside the controller: the start of a run,
 * member replies and failures, timeouts, goal-contract decisions, a human interrupt and later
 * outcomes. Returns the events to append or throws a CouncilError; never mutates state.
 */
export function decide(command: CouncilCommand, state: CouncilRunState): CouncilEvent[] {
  instantMs(command.now, 'now');
  switch (command.type) {
    case C.StartRun:
      return decideStartRun(command, state);
    case C.SubmitTaskResult:
      return decideSubmitTaskResult(command, state);
    case C.ReportTaskFailure:
      return decideReportTaskFailure(command, state);
    case C.RecordRefusedAnswer:
      return decideRecordRefusedAnswer(command, state);
    case C.ExpireTask:
      return decideExpireTask(command, state);
    case C.ReviseGoalContract:
      return decideReviseGoalContract(command, state);
    case C.DeclineFrameChallenge:
      return decideDeclineFrameChallenge(command, state);
    case C.InterruptRun:
      return decideInterruptRun(command, state);
    case C.RecordOutcome:
      return decideRecordOutcome(command, state);
    case C.RecordStructuredOutcome:
      return decideRecordStructuredOutcome(command, state);
    case C.RecordDecisionBridge:
      return decideRecordDecisionBridge(command, state);
    case C.ResolveValueChoice:
      return decideResolveValueChoice(command, state);
    default: {
      const _exhaustive: never = command;
      throw new CouncilError('SCHEMA_VIOLATION', `unknown command ${(_exhaustive as { type: string }).type}`, 'type');
    }
  }
}
