/**
 * Spec section 6: the weight formula (6.1), vote aggregation (6.2), outcome determination (6.3),
 * all on exact decimals (DESIGN section 2) so that a tie is a tie.
 */
import type { ResponseType } from './contracts';
import { ExactDecimal, ONE, ZERO, add, compare, decimalFromNumber, multiply, toNumber } from './exact-decimal';

/**
 * 6.1 clamp(x, 0, 1) = max(0, min(1, x)). NaN has no place in [0, 1]: it clamps to 0, the least
 * influence (validation already rejects NaN and infinities on the wire with SCHEMA_VIOLATION; the
 * formula stays total for anything a registry or a caller might hand it). -0 becomes 0.
 */
export function clampFactor(x: number): number {
  if (Number.isNaN(x) || x <= 0) return 0;
  if (x >= 1) return 1;
  return x;
}

export interface WeightFactors {
  domain_authority: number;
  confidence: number;
  trust_score: number;
}

export interface ComputedWeight {
  /** The exact product of the three clamped factors' shortest decimals. */
  exact: ExactDecimal;
  /** Its nearest JSON number: the `weight` reported on the response. */
  weight: number;
}

function exactFactor(x: number): ExactDecimal {
  const c = clampFactor(x);
  return c === 0 ? ZERO : c === 1 ? ONE : decimalFromNumber(c);
}

/** 6.1 Weight = clamp(domain_authority) x clamp(confidence) x clamp(trust_score), exactly. */
export function computeWeight(f: WeightFactors): ComputedWeight {
  const exact = multiply(multiply(exactFactor(f.domain_authority), exactFactor(f.confidence)), exactFactor(f.trust_score));
  return { exact, weight: toNumber(exact) };
}

/** Running exact vote totals (6.2). */
export interface VoteTally {
  readonly votesFor: ExactDecimal;
  readonly votesAgainst: ExactDecimal;
}

export const EMPTY_TALLY: VoteTally = { votesFor: ZERO, votesAgainst: ZERO };

export function addVote(tally: VoteTally, responseType: ResponseType, weight: ExactDecimal): VoteTally {
  return responseType === 'endorse'
    ? { votesFor: add(tally.votesFor, weight), votesAgainst: tally.votesAgainst }
    : { votesFor: tally.votesFor, votesAgainst: add(tally.votesAgainst, weight) };
}

/** 6.2 votes_for / votes_against over a set of responses (order does not matter: exact sums commute). */
export function tallyVotes(responses: Iterable<WeightFactors & { response_type: ResponseType }>): VoteTally {
  let tally = EMPTY_TALLY;
  for (const r of responses) tally = addVote(tally, r.response_type, computeWeight(r).exact);
  return tally;
}

/** The tally as JSON numbers, as reported on Resolution and Decision Event. */
export function reportedVotes(tally: VoteTally): { votes_for: number; votes_against: number } {
  return { votes_for: toNumber(tally.votesFor), votes_against: toNumber(tally.votesAgainst) };
}

/** 6.3: approved if for > against, rejected if against > for, escalated on an exact tie (incl. 0 = 0). */
export function determineOutcome(tally: VoteTally): 'approved' | 'rejected' | 'escalated' {
  const c = compare(tally.votesFor, tally.votesAgainst);
  return c > 0 ? 'approved' : c < 0 ? 'rejected' : 'escalated';
}

export function totalWeight(tally: VoteTally): ExactDecimal {
  return add(tally.votesFor, tally.votesAgainst);
}
