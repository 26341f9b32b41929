import type { DecisionEvent, Proposal } from '@conclave/acp-protocol';
import type { ConclaveClient } from '@conclave/sdk';
import { OUTCOME_EXIT_CODES, formatDecision } from '../format';
import type { Print } from './escalations.command';

/** Exit code of a proposal as it stands (0 approved, 10 rejected, 11 escalated, 12 expired, 13 pending). */
export function exitCodeOf(proposal: Pick<Proposal, 'status' | 'resolution'>): number {
  const key = (
    proposal.status === 'pending' ? 'pending' : (proposal.resolution?.outcome ?? proposal.status)
  ) as keyof typeof OUTCOME_EXIT_CODES;
  return OUTCOME_EXIT_CODES[key] ?? 1;
}

export interface ResolveOptions {
  approve?: boolean;
  reject?: boolean;
  note?: string;
  /** The human's id; may be left out when a token names the human. */
  as?: string;
}

/**
 * `conclave resolve <proposal_id> --approve|--reject --note "..."`: a human resolution bound to
 * the open escalation (its id and payload hash are read first). Exit code: the proposal's outcome
 * after it (11 while an M-of-N sign-off still waits for others); 2 on a refused command.
 */
export async function resolveEscalation(
  client: ConclaveClient,
  proposalId: string,
  o: ResolveOptions,
  json: boolean,
  print: Print,
): Promise<number> {
  if (Boolean(o.approve) === Boolean(o.reject)) throw new UsageError('say --approve or --reject (exactly one)');
  if (!o.note || o.note.trim().length === 0) throw new UsageError('--note is required: say why');
  const { binding } = await client.escalation(proposalId);
  const proposal = await client.resolve(proposalId, {
    outcome: o.approve ? 'approved' : 'rejected',
    note: o.note,
    ...(o.as ? { resolved_by: o.as } : {}),
    escalation_id: binding.escalation_id,
    payload_hash: binding.payload_hash,
  });
  if (json) print(JSON.stringify(proposal));
  else if (proposal.status === 'escalated') print(`sign-off recorded on ${proposalId}; the proposal waits for more sign-offs`);
  else print(`${proposalId} ${proposal.resolution?.outcome.toUpperCase()} (trigger MANUAL by ${proposal.resolution?.resolved_by})`);
  return exitCodeOf(proposal);
}

export interface WaitOptions {
  /** Wait through an escalation for the human (or ladder) outcome instead of exiting 11. */
  final?: boolean;
  timeoutMs?: number;
}

/**
 * `conclave wait <proposal_id>`: blocks until the proposal is decided and exits with the outcome's
 * code, so a CI pipeline can gate on it (0 approved, 10 rejected, 11 escalated, 12 expired,
 * 13 still pending at the timeout). With --final an escalation is waited through.
 */
export async function waitForOutcome(
  client: ConclaveClient,
  proposalId: string,
  o: WaitOptions,
  json: boolean,
  print: Print,
): Promise<number> {
  const settled = (p: Pick<Proposal, 'status'>) =>
    p.status === 'resolved' || p.status === 'expired' || (p.status === 'escalated' && !o.final);
  const report = (code: number, line: string, body: unknown) => (print(json ? JSON.stringify(body) : line), code);
  // Follow decisions from a little before now, so one made while the consumer starts is not missed.
  const proposal = await client.get(proposalId);
  const stop = new AbortController();
  const decisions = client.decisions({ domain: proposal.domain, since: new Date(Date.now() - 5_000), signal: stop.signal });
  const current = await client.get(proposalId);
  if (settled(current)) {
    void decisions.return(undefined).catch(() => undefined);
    return report(exitCodeOf(current), `${proposalId} ${current.resolution?.outcome.toUpperCase()}`, outcomeOf(current));
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), o.timeoutMs ?? 24 * 3600_000)));
  try {
    for (;;) {
      const next = await Promise.race([decisions.next(), timeout]);
      if (next === 'timeout') {
        const p = await client.get(proposalId);
        return report(exitCodeOf(p), `${proposalId} still ${p.status} after ${o.timeoutMs} ms`, outcomeOf(p));
      }
      if (next.done) throw new Error('the decision stream ended');
      const d: DecisionEvent = next.value;
      if (d.proposal_id !== proposalId || (d.outcome === 'escalated' && o.final)) continue;
      return report(OUTCOME_EXIT_CODES[d.outcome], formatDecision(d), d);
    }
  } finally {
    clearTimeout(timer);
    // Ends the consumer even while a read is pending; the generator's own cleanup runs on its own.
    stop.abort();
    void decisions.return(undefined).catch(() => undefined);
  }
}

/**
 * `wait --json` prints one object of the same shape whether the decision was already made (read
 * from the proposal) or arrives on the stream (the decision event, which has these fields and more).
 */
function outcomeOf(p: Proposal): Record<string, unknown> {
  const r = p.resolution;
  return {
    proposal_id: p.proposal_id,
    domain: p.domain,
    status: p.status,
    outcome: r?.outcome ?? p.status,
    ...(r ? { trigger: r.trigger, votes_for: r.votes_for, votes_against: r.votes_against, decided_at: r.decided_at } : {}),
    ...(r?.resolved_by !== undefined ? { resolved_by: r.resolved_by, note: r.note ?? null } : {}),
  };
}

/** A wrong invocation: exit code 64 (EX_USAGE). */
export class UsageError extends Error {
  readonly exitCode = 64;
}
