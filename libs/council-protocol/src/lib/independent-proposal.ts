import { GoalContract } from './goal-contract';
import { RunData } from './state';
import { isRecord } from './validation';

/**
 * Spec section 10: before the proposal stage closes, a proposer sees the GoalContract and
 * nothing else, in particular no peer candidate (no early cross-copying, no anchor).
 */
export function proposalTaskInputs(run: RunData): { goal_contract: GoalContract } {
  return { goal_contract: run.goal_contract };
}

/** Every string inside a JSON value. */
export function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (isRecord(value)) return [...Object.keys(value), ...Object.values(value).flatMap(stringsIn)];
  return [];
}

/**
 * Independence check over what a proposer was given: none of the other candidates' ids, and
 * none of their positions, may appear in its inputs. Returns the offending references.
 */
export function independenceViolations(inputs: unknown, others: readonly { candidate_id: string; position?: string }[]): string[] {
  const text = stringsIn(inputs);
  const found: string[] = [];
  for (const o of others) {
    if (text.some((s) => s.includes(o.candidate_id))) found.push(o.candidate_id);
    else if (o.position && o.position.length >= 12 && text.some((s) => s.includes(o.position as string))) found.push(o.candidate_id);
  }
  return found;
}

/** True when no proposal-stage task of the run was shown another member's candidate. */
export function proposalsWereIndependent(run: RunData): boolean {
  return run.task_order
    .map((id) => run.tasks[id])
    .filter((t) => t.stage === 'proposal')
    .every((t) => {
      const others = run.candidate_order.map((id) => run.candidates[id].candidate).filter((c) => c.author_member_id !== t.member_id);
      return independenceViolations(t.inputs, others).length === 0;
    });
}
