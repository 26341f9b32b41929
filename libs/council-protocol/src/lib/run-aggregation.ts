import { ReviewArtifact, meanRubricScore } from './review-artifact';

/**
 * Spec 15.2 (council:L4, optional here): how current artifacts are compared. Pluggable; no
 * method is the default for every task. The input is current-run artifacts only: historical
 * capability (15.3) is a different type and never enters an aggregation (section 16, rule 1).
 */
export interface AggregationInput {
  candidate_ids: readonly string[];
  /** Reviews of this run; self-reviews are excluded by construction (11.3). */
  reviews: readonly ReviewArtifact[];
  /** Authors, so that a reviewer's score of its own candidate can be dropped defensively. */
  authors: Readonly<Record<string, string>>;
}

export type AggregationResult =
  | { policy: string; kind: 'ranking'; ranking: { candidate_id: string; score: number }[] }
  | { policy: string; kind: 'frontier'; frontier: string[]; dominated: { candidate_id: string; dominated_by: string[] }[] };

export interface AggregationPolicy {
  readonly name: string;
  aggregate(input: AggregationInput): AggregationResult;
}

/** Historical capability (15.3) lives apart, scoped and uncertain; not used by any aggregation. */
export interface CapabilityEstimate {
  model_family: string;
  role: string;
  domain: string;
  estimate: number;
  uncertainty: number;
  observations: number;
}

function usable(input: AggregationInput): ReviewArtifact[] {
  return input.reviews.filter(
    (r) => input.candidate_ids.includes(r.target_candidate_id) && input.authors[r.target_candidate_id] !== r.reviewer_member_id,
  );
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Borda count: each reviewer ranks the candidates it reviewed (its `ranking` if given, else
 * by mean rubric score); a candidate gets (n - 1 - position) points per reviewer. Ties in the
 * final order break by candidate id, deterministically.
 */
export const bordaCount: AggregationPolicy = {
  name: 'borda-count',
  aggregate(input) {
    const points: Record<string, number> = Object.fromEntries(input.candidate_ids.map((id) => [id, 0]));
    const byReviewer = new Map<string, ReviewArtifact[]>();
    for (const r of usable(input)) byReviewer.set(r.reviewer_member_id, [...(byReviewer.get(r.reviewer_member_id) ?? []), r]);
    for (const reviews of byReviewer.values()) {
      const explicit = reviews.find((r) => r.ranking && r.ranking.length > 0)?.ranking?.filter((id) => id in points);
      const order =
        explicit && explicit.length
          ? explicit
          : [...reviews]
              .sort((a, b) => (meanRubricScore(b) ?? 0) - (meanRubricScore(a) ?? 0) || byId(a.target_candidate_id, b.target_candidate_id))
              .map((r) => r.target_candidate_id);
      order.forEach((id, pos) => (points[id] += order.length - 1 - pos));
    }
    const ranking = Object.entries(points)
      .map(([candidate_id, score]) => ({ candidate_id, score }))
      .sort((a, b) => b.score - a.score || byId(a.candidate_id, b.candidate_id));
    return { policy: this.name, kind: 'ranking', ranking };
  },
};

/**
 * No ranking: keep the Pareto frontier over the rubric criteria (mean per criterion). A
 * candidate is dominated when another is at least as good on every criterion and better on one.
 */
export const paretoFrontier: AggregationPolicy = {
  name: 'pareto-frontier',
  aggregate(input) {
    const reviews = usable(input);
    const criteria = [...new Set(reviews.flatMap((r) => Object.keys(r.rubric_scores)))].sort();
    const vector: Record<string, number[]> = {};
    for (const id of input.candidate_ids) {
      vector[id] = criteria.map((c) => {
        const xs = reviews.filter((r) => r.target_candidate_id === id && c in r.rubric_scores).map((r) => r.rubric_scores[c]);
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
      });
    }
    const dominates = (a: number[], b: number[]) => a.every((x, i) => x >= b[i]) && a.some((x, i) => x > b[i]);
    const dominated = input.candidate_ids
      .map((id) => ({ candidate_id: id, dominated_by: input.candidate_ids.filter((o) => o !== id && dominates(vector[o], vector[id])) }))
      .filter((d) => d.dominated_by.length > 0);
    const out = new Set(dominated.map((d) => d.candidate_id));
    return { policy: this.name, kind: 'frontier', frontier: input.candidate_ids.filter((id) => !out.has(id)), dominated };
  },
};
