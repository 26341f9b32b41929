/**
 * Spec section 8 (timeout and expiration) with the 15.5 grace period for clock skew.
 */
import type { Outcome, ProposalStatus, Trigger } from './contracts';
import { instantOf, isoFromInstant } from './timestamps';
import { VoteTally, determineOutcome } from './weighted-voting';

/**
 * 8.1 + 15.5: expired when now >= expires_at + grace. `expires_at: null` never expires (8.4).
 * The grace (milliseconds, >= 0) is deployment config, handed in; it only ever delays expiry.
 */
export function isExpired(expiresAt: string | null, now: string, graceMs = 0): boolean {
  if (expiresAt === null) return false;
  return instantOf(now) >= instantOf(expiresAt) + BigInt(Math.max(0, Math.trunc(graceMs))) * 1_000_000n;
}

/** The instant the sweeper should act: expires_at + grace, or null when there is no expiry. */
export function expiryDeadline(expiresAt: string | null, graceMs = 0): string | null {
  if (expiresAt === null) return null;
  if (graceMs <= 0) return expiresAt;
  return isoFromInstant(instantOf(expiresAt) + BigInt(Math.trunc(graceMs)) * 1_000_000n);
}

export interface ExpirationResult {
  status: Exclude<ProposalStatus, 'pending'>;
  outcome: Outcome;
  trigger: Extract<Trigger, 'timeout'>;
}

/**
 * 8.2 expiration outcomes (table B.4 of missing-tables.md). Precondition: pending, expired, and
 * quorum not met (7.4 checks quorum first).
 *   0 responses             -> expired / expired
 *   for > against           -> resolved / approved
 *   against > for           -> resolved / rejected
 *   for == against (exact)  -> escalated / escalated (escalation reason `timeout-tie`)
 * The trigger is always `timeout`.
 */
export function expirationOutcome(responseCount: number, tally: VoteTally): ExpirationResult {
  if (responseCount === 0) return { status: 'expired', outcome: 'expired', trigger: 'timeout' };
  const outcome = determineOutcome(tally);
  return { status: outcome === 'escalated' ? 'escalated' : 'resolved', outcome, trigger: 'timeout' };
}
