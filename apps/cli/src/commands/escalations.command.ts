import type { ConclaveClient, EscalationQuery, EscalationSummary } from '@conclave/sdk';

export type Print = (line: string) => void;

/** One human-readable line per escalation. */
export function formatEscalation(e: EscalationSummary): string {
  const who = e.assignees.length > 0 ? e.assignees.join(',') : 'anyone';
  const next = e.next_step_due_at ? `  next step ${e.next_step_due_at}` : '';
  const signed = e.sign_offs.length > 0 ? `  signed ${e.sign_offs.map((s) => `${s.by}:${s.outcome}`).join(',')}` : '';
  const closed = e.resolution
    ? `  ${e.resolution.outcome.toUpperCase()}${e.resolution.resolved_by ? ` by ${e.resolution.resolved_by}` : ''}`
    : '';
  return `${e.proposal_id}  ${e.status.padEnd(8)} ${e.escalation.reason.padEnd(11)} ${e.domain}  -> ${who}  since ${e.escalation.escalated_at}${next}${signed}${closed}`;
}

/**
 * `conclave escalations list`: the escalation inbox (open ones unless --status says otherwise).
 * Human-readable lines, or one JSON object per escalation with --json. Exit code 0.
 */
export async function listEscalations(client: ConclaveClient, query: EscalationQuery, json: boolean, print: Print): Promise<number> {
  const escalations = await client.escalations(query);
  if (json) escalations.forEach((e) => print(JSON.stringify(e)));
  else if (escalations.length === 0) print('no escalations waiting for a human');
  else escalations.forEach((e) => print(formatEscalation(e)));
  return 0;
}

/** `conclave escalations show <proposal_id>`: the escalation, its payload, every response with weight and reason. */
export async function showEscalation(client: ConclaveClient, proposalId: string, json: boolean, print: Print): Promise<number> {
  const view = await client.escalation(proposalId);
  if (json) {
    print(JSON.stringify(view));
    return 0;
  }
  const { escalation: e, proposal: p, votes } = view;
  print(formatEscalation(e));
  print(`  escalated by ${e.escalation.requested_by}${e.escalation.note ? `: ${e.escalation.note}` : ''}`);
  print(`  author ${p.author}, payload ${JSON.stringify(p.payload)}`);
  print(`  votes for ${votes.for} / against ${votes.against} (${votes.responses} responses)`);
  for (const r of p.responses) print(`    ${r.response_type.padEnd(9)} ${r.participant_id}  weight ${r.weight}  ${r.reason ?? ''}`);
  print(`  binding: escalation_id ${view.binding.escalation_id}, payload_hash ${view.binding.payload_hash}`);
  return 0;
}
