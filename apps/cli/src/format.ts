import type { DecisionEvent } from '@conclave/acp-protocol';

/** One human-readable line per decision event. */
export function formatDecision(d: DecisionEvent, title?: string): string {
  const votes = `for ${d.votes_for} / against ${d.votes_against}`;
  const who = d.resolved_by ? ` by ${d.resolved_by}` : '';
  const head = title ? `${title}: ` : '';
  return `${head}${d.outcome.toUpperCase()} (trigger ${d.trigger.toUpperCase()}${who}) ${votes}  [${d.domain} ${d.proposal_id}]`;
}

/** Exit codes a CI pipeline can gate on (issue: approved, rejected, escalated, expired differ). */
export const OUTCOME_EXIT_CODES = { approved: 0, rejected: 10, escalated: 11, expired: 12, pending: 13 } as const;
