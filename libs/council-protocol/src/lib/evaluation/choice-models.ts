import { PairwiseMatrix, ReviewerBallot } from './ballots';

/**
 * Bradley–Terry and Plackett–Luce (spec 15.2, probability models) share one form: each
 * observation is a choice of one candidate out of a set, P(i | S) = p_i / Σ_{j∈S} p_j. The
 * strengths are the maximum-likelihood fit, found by Hunter's MM iteration (2004), which raises
 * the likelihood at every step.
 */
export interface ChoiceEvent {
  chosen: string;
  from: string[];
  weight: number;
}

export interface ChoiceModelFit {
  /** Strengths, summing to 1: P(i beats j) = p_i / (p_i + p_j). */
  strengths: Record<string, number>;
  iterations: number;
  converged: boolean;
  /** Largest |∂ log L / ∂ log p_i| at the fit: 0 at the maximum. */
  max_score_residual: number;
}

export interface ChoiceModelOptions {
  /**
   * Virtual comparisons per pair, split evenly (a tie). Without them a candidate that wins every
   * comparison has infinite strength and the fit never converges; one virtual tie per pair is a
   * weak prior that shrinks small samples toward equality (section 16, rule 4).
   */
  prior_comparisons: number;
  max_iterations: number;
  /** Stop when no log-strength moves by more than this. */
  tolerance: number;
}

export const DEFAULT_CHOICE_MODEL_OPTIONS: ChoiceModelOptions = { prior_comparisons: 1, max_iterations: 10_000, tolerance: 1e-10 };

function priorEvents(ids: readonly string[], prior: number): ChoiceEvent[] {
  const out: ChoiceEvent[] = [];
  if (prior <= 0) return out;
  for (let i = 0; i < ids.length; i++) {
    for (let j = i + 1; j < ids.length; j++) {
      out.push(
        { chosen: ids[i], from: [ids[i], ids[j]], weight: prior / 2 },
        { chosen: ids[j], from: [ids[i], ids[j]], weight: prior / 2 },
      );
    }
  }
  return out;
}

/** Bradley–Terry observations: every head-to-head preference; a tie counts half to each side. */
export function bradleyTerryEvents(m: PairwiseMatrix): ChoiceEvent[] {
  const out: ChoiceEvent[] = [];
  for (const a of m.candidate_ids) {
    for (const b of m.candidate_ids) {
      if (a === b) continue;
      const weight = m.wins[a][b] + m.ties[a][b] / 2;
      if (weight > 0) out.push({ chosen: a, from: [a, b], weight });
    }
  }
  return out;
}

/**
 * Plackett–Luce observations: a ballot is a sequence of choices, best first, each from what is
 * left. Candidates tied in a tier are each chosen from the same remaining set (Breslow's
 * approximation for ties); with no ties this is the exact Plackett–Luce likelihood.
 */
export function plackettLuceEvents(ballots: readonly ReviewerBallot[]): ChoiceEvent[] {
  const out: ChoiceEvent[] = [];
  for (const ballot of ballots) {
    for (let k = 0; k < ballot.tiers.length; k++) {
      const remaining = ballot.tiers.slice(k).flat();
      if (remaining.length < 2) continue;
      for (const id of ballot.tiers[k]) out.push({ chosen: id, from: remaining, weight: 1 });
    }
  }
  return out;
}

function residuals(ids: readonly string[], events: readonly ChoiceEvent[], p: Record<string, number>): number {
  const grad: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const e of events) {
    const total = e.from.reduce((s, j) => s + p[j], 0);
    grad[e.chosen] += e.weight;
    for (const j of e.from) grad[j] -= (e.weight * p[j]) / total;
  }
  return Math.max(0, ...Object.values(grad).map(Math.abs));
}

/** Maximum-likelihood strengths for the choice events, with the virtual-tie prior added. */
export function fitChoiceModel(
  candidateIds: readonly string[],
  observed: readonly ChoiceEvent[],
  options: Partial<ChoiceModelOptions> = {},
): ChoiceModelFit {
  const opts = { ...DEFAULT_CHOICE_MODEL_OPTIONS, ...options };
  const ids = [...candidateIds];
  if (ids.length === 0) return { strengths: {}, iterations: 0, converged: true, max_score_residual: 0 };
  const events = [...observed.filter((e) => e.weight > 0 && e.from.length > 1), ...priorEvents(ids, opts.prior_comparisons)];
  // Nothing observed and no prior: every strength is equally (un)supported.
  if (events.length === 0)
    return { strengths: Object.fromEntries(ids.map((id) => [id, 1 / ids.length])), iterations: 0, converged: true, max_score_residual: 0 };
  const wins: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const e of events) wins[e.chosen] += e.weight;
  let p: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 1 / ids.length]));
  let iterations = 0;
  let converged = false;
  while (iterations < opts.max_iterations) {
    iterations++;
    const denom: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
    for (const e of events) {
      const total = e.from.reduce((s, j) => s + p[j], 0);
      for (const j of e.from) denom[j] += e.weight / total;
    }
    const next: Record<string, number> = {};
    for (const id of ids) next[id] = denom[id] > 0 ? wins[id] / denom[id] : p[id];
    const sum = ids.reduce((s, id) => s + next[id], 0);
    // A candidate never chosen (no prior) collapses to 0; keep it at 0 rather than divide by it.
    let moved = 0;
    for (const id of ids) {
      next[id] = next[id] / sum;
      if (next[id] > 0 && p[id] > 0) moved = Math.max(moved, Math.abs(Math.log(next[id] / p[id])));
      else if (next[id] !== p[id]) moved = Infinity;
    }
    p = next;
    if (moved < opts.tolerance) {
      converged = true;
      break;
    }
  }
  return { strengths: p, iterations, converged, max_score_residual: residuals(ids, events, p) };
}
