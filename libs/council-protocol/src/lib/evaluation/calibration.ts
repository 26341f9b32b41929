import { CandidateArtifact } from '../candidate-artifact';
import { Confidence, LEVELS_OF_THREE } from '../contracts';
import { NO_DECISION, SYNTHESIS } from '../decision-record';
import { fail } from '../validation';
import { CapabilityRole, CapabilityRunInput, chairOf } from './capability';
import { standingOutcome } from './outcomes';

/**
 * Calibration (spec 15.4: prediction scoring such as Brier/log loss). Ordinal confidence
 * (`ordinal-confidence-v1`: low | medium | high) becomes a probability that the decision
 * succeeds through a mapping the binding states; the scores then show whether "high" really
 * succeeds more often than "low", per member × role × domain.
 */
export type ConfidenceProbabilities = Record<Confidence, number>;

/** Evenly spaced around even odds: a stated binding choice, not a measured one. */
export const DEFAULT_CONFIDENCE_PROBABILITIES: ConfidenceProbabilities = { low: 0.25, medium: 0.5, high: 0.75 };

/** `path`: where the mapping sits in the input (`policy.confidence_probabilities` in a policy), for the error's field. */
export function checkConfidenceProbabilities(m: ConfidenceProbabilities, path = 'confidence_probabilities'): ConfidenceProbabilities {
  for (const level of LEVELS_OF_THREE) if (!(m[level] > 0 && m[level] < 1)) fail(`${path}.${level}`, 'must be in (0, 1)');
  if (!(m.low < m.medium && m.medium < m.high)) fail(path, 'must increase from low to high');
  return m;
}

/** One scored forecast: a member's stated confidence on a decision, and what happened. */
export interface Forecast {
  forecast_id: string;
  member_id: string;
  role: CapabilityRole;
  domain: string;
  decision_id: string;
  confidence: Confidence;
  probability: number;
  outcome: 0 | 1;
}

export interface RunForecasts {
  forecasts: Forecast[];
  /** The decision had no known binary verdict (unknown, mixed, or none yet): nothing scored. */
  unscored: { decision_id: string; reason: string } | null;
}

/**
 * The forecasts a run's standing outcome scores: the chair's DecisionRecord confidence
 * (synthesizer), and the confidence of each chosen candidate's author (proposer, the latest
 * chosen version of its lineage). Success scores 1, failure 0; anything else scores nothing.
 */
export function runForecasts(
  run: CapabilityRunInput,
  probabilities: ConfidenceProbabilities = DEFAULT_CONFIDENCE_PROBABILITIES,
): RunForecasts {
  checkConfidenceProbabilities(probabilities);
  const { record, domain } = run;
  const d = record.decision_record;
  if (!d || d.selected_path === NO_DECISION) return { forecasts: [], unscored: null };
  const outcome = standingOutcome(run.outcomes, d.decision_id);
  const verdict = outcome?.verdict;
  if (!outcome || (verdict !== 'success' && verdict !== 'failure')) {
    const known = run.outcomes.filter((o) => o.decision_id === d.decision_id);
    return {
      forecasts: [],
      unscored: {
        decision_id: d.decision_id,
        reason: outcome ? `verdict ${verdict}` : known.length ? 'outcome unknown' : 'no outcome yet',
      },
    };
  }
  const value: 0 | 1 = verdict === 'success' ? 1 : 0;
  const forecast = (member_id: string, role: CapabilityRole, confidence: Confidence, ref: string): Forecast => ({
    forecast_id: `${outcome.outcome_id}:${role}:${member_id}:${ref}`,
    member_id,
    role,
    domain,
    decision_id: d.decision_id,
    confidence,
    probability: probabilities[confidence],
    outcome: value,
  });
  const out: Forecast[] = [];
  const chair = chairOf(record);
  if (chair) out.push(forecast(chair, 'synthesizer', d.confidence, 'decision'));
  const picked = new Set([...(d.selected_path === SYNTHESIS ? [] : [d.selected_path]), ...d.incorporated]);
  const byId = new Map<string, CandidateArtifact>(record.artifacts.candidates.map((c) => [c.candidate_id, c]));
  for (const l of record.lineage) {
    const chosen = l.versions.filter((v) => picked.has(v));
    const candidate = chosen.length ? byId.get(chosen[chosen.length - 1]) : undefined;
    if (candidate) out.push(forecast(l.author_member_id, 'proposer', candidate.confidence, candidate.candidate_id));
  }
  return { forecasts: out, unscored: null };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Mean squared error of the probabilities: 0 is perfect, 0.25 is always saying 0.5. */
export function brierScore(forecasts: readonly Pick<Forecast, 'probability' | 'outcome'>[]): number | null {
  return forecasts.length ? mean(forecasts.map((f) => (f.probability - f.outcome) ** 2)) : null;
}

/** Mean negative log-likelihood (natural log); probabilities clipped to [eps, 1 − eps]. */
export function logLoss(forecasts: readonly Pick<Forecast, 'probability' | 'outcome'>[], eps = 1e-15): number | null {
  if (!forecasts.length) return null;
  return mean(
    forecasts.map((f) => {
      const p = Math.min(1 - eps, Math.max(eps, f.probability));
      return -(f.outcome * Math.log(p) + (1 - f.outcome) * Math.log(1 - p));
    }),
  );
}

export interface ReliabilityBin {
  probability: number;
  count: number;
  observed_frequency: number;
}

/** One bin per stated probability (ordinal confidence gives at most three), in increasing order. */
export function reliabilityBins(forecasts: readonly Pick<Forecast, 'probability' | 'outcome'>[]): ReliabilityBin[] {
  const bins = new Map<number, number[]>();
  for (const f of forecasts) bins.set(f.probability, [...(bins.get(f.probability) ?? []), f.outcome]);
  return [...bins.entries()]
    .sort(([a], [b]) => a - b)
    .map(([probability, os]) => ({ probability, count: os.length, observed_frequency: mean(os) }));
}

/**
 * Murphy's decomposition of the Brier score over the reliability bins:
 * Brier = reliability − resolution + uncertainty (exact when each bin holds one probability).
 * Reliability is the calibration error; resolution is how much the stated confidence separates
 * successes from failures.
 */
export function murphyDecomposition(
  forecasts: readonly Pick<Forecast, 'probability' | 'outcome'>[],
): { reliability: number; resolution: number; uncertainty: number } | null {
  if (!forecasts.length) return null;
  const n = forecasts.length;
  const base = mean(forecasts.map((f) => f.outcome));
  const bins = reliabilityBins(forecasts);
  return {
    reliability: bins.reduce((s, b) => s + b.count * (b.probability - b.observed_frequency) ** 2, 0) / n,
    resolution: bins.reduce((s, b) => s + b.count * (b.observed_frequency - base) ** 2, 0) / n,
    uncertainty: base * (1 - base),
  };
}

export interface CalibrationScope {
  member_id: string;
  role: CapabilityRole;
  domain: string;
  count: number;
  brier: number;
  log_loss: number;
  reliability: { confidence: Confidence; probability: number; count: number; observed_frequency: number }[];
  murphy: { reliability: number; resolution: number; uncertainty: number };
}

/** Brier score, log loss and reliability per member × role × domain, sorted by that key. */
export function calibrationReport(forecasts: readonly Forecast[]): CalibrationScope[] {
  const groups = new Map<string, Forecast[]>();
  const seen = new Set<string>();
  for (const f of forecasts) {
    if (seen.has(f.forecast_id)) continue;
    seen.add(f.forecast_id);
    const key = JSON.stringify([f.member_id, f.role, f.domain]);
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  return [...groups.keys()].sort().map((key) => {
    const fs = groups.get(key) as Forecast[];
    const [member_id, role, domain] = JSON.parse(key) as [string, CapabilityRole, string];
    return {
      member_id,
      role,
      domain,
      count: fs.length,
      brier: brierScore(fs) as number,
      log_loss: logLoss(fs) as number,
      reliability: LEVELS_OF_THREE.flatMap((confidence) => {
        const at = fs.filter((f) => f.confidence === confidence);
        return at.length
          ? [{ confidence, probability: at[0].probability, count: at.length, observed_frequency: mean(at.map((f) => f.outcome)) }]
          : [];
      }),
      murphy: murphyDecomposition(fs) as { reliability: number; resolution: number; uncertainty: number },
    };
  });
}

/**
 * The mapping the record supports: per confidence level, the observed success rate shrunk toward
 * the stated probability by `prior_strength` pseudo-forecasts (few outcomes move it little).
 */
export function empiricalConfidenceProbabilities(
  forecasts: readonly Forecast[],
  stated: ConfidenceProbabilities = DEFAULT_CONFIDENCE_PROBABILITIES,
  prior_strength = 2,
): Record<Confidence, { probability: number; count: number }> {
  const out = {} as Record<Confidence, { probability: number; count: number }>;
  for (const level of LEVELS_OF_THREE) {
    const at = forecasts.filter((f) => f.confidence === level);
    const successes = at.reduce((s, f) => s + f.outcome, 0);
    out[level] = { probability: (successes + prior_strength * stated[level]) / (at.length + prior_strength), count: at.length };
  }
  return out;
}
