import { MemberFailureNote } from './decision-record';
import { activeMembers, rolesOf } from './run-queries';
import { RunData } from './state';

/**
 * Spec section 18: participant failure must be visible. A missing perspective is named by the
 * failed member's role (its lens, e.g. "skeptic"), so the decision says whose view is absent.
 */
export function missingPerspectives(run: RunData): string[] {
  const out: string[] = [];
  for (const f of run.failures) {
    const label = `${f.role} (${f.member_id})`;
    if (!out.includes(label)) out.push(label);
  }
  return out;
}

export function memberFailureNotes(run: RunData): MemberFailureNote[] {
  return run.failures.map((f) => ({ member_id: f.member_id, role: f.role, stage: f.stage, round: f.round, reason: f.reason }));
}

/** Minimum valid quorum (17.1): enough members still standing. */
export function quorumHolds(run: RunData): boolean {
  return activeMembers(run).length >= run.policy.min_quorum;
}

/** One role fails: continue if quorum holds. All fail: stop. High risk: stop on any gap. */
export type DegradedVerdict =
  | { continue: true; degraded: boolean }
  | { continue: false; reason: 'below-quorum' | 'incomplete-panel-high-risk' };

export function degradedVerdict(run: RunData): DegradedVerdict {
  if (!quorumHolds(run)) return { continue: false, reason: 'below-quorum' };
  // A chair failing at synthesis is handled by its authorised fallback (or ends the run
  // without synthesis); it removes no perspective from the panel's artifacts.
  const perspectiveLost = run.failures.some((f) => f.stage !== 'synthesis');
  if (perspectiveLost && run.goal_contract.risk_level === 'high' && run.policy.stop_high_risk_on_missing_perspective) {
    return { continue: false, reason: 'incomplete-panel-high-risk' };
  }
  return { continue: true, degraded: run.failures.length > 0 };
}

/** Degraded modes for the RunRecord, in words a reader can act on. */
export function degradedModes(run: RunData): string[] {
  const modes: string[] = [];
  for (const f of run.failures) {
    const roles = rolesOf(run, f.member_id).join('/');
    modes.push(`${f.member_id} (${f.role}; ${roles}) failed at ${f.stage} round ${f.round}: ${f.reason}; perspective missing from then on`);
  }
  const chairTasks = run.task_order.map((id) => run.tasks[id]).filter((t) => t.stage === 'synthesis');
  if (chairTasks.length > 1) modes.push(`chair fallback used: ${chairTasks.map((t) => t.member_id).join(' -> ')}`);
  return modes;
}
