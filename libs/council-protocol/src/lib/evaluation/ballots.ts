import { ReviewArtifact, meanRubricScore } from '../review-artifact';
import { AggregationInput } from '../run-aggregation';
import { seededShuffle } from '../seeded-shuffle';

/**
 * A reviewer's ballot over the candidates it reviewed (spec 15.2): tiers best first, candidates
 * in one tier tied. A candidate the reviewer did not review is absent (no preference), never last.
 */
export interface ReviewerBallot {
  reviewer_member_id: string;
  /** `ranking`: the review's explicit ranking; `rubric`: ordered by mean rubric score. */
  source: 'ranking' | 'rubric';
  tiers: string[][];
}

export interface DroppedReview {
  review_id: string;
  reason: 'self-review' | 'unknown-candidate';
}

/** Reviews an aggregation may use: targets in the run, never the reviewer's own candidate (11.3). */
export function usableReviews(input: AggregationInput): { used: ReviewArtifact[]; dropped: DroppedReview[] } {
  const used: ReviewArtifact[] = [];
  const dropped: DroppedReview[] = [];
  for (const r of input.reviews) {
    if (!input.candidate_ids.includes(r.target_candidate_id)) dropped.push({ review_id: r.review_id, reason: 'unknown-candidate' });
    else if (input.authors[r.target_candidate_id] === r.reviewer_member_id) dropped.push({ review_id: r.review_id, reason: 'self-review' });
    else used.push(r);
  }
  return { used, dropped };
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One ballot per reviewer, with the same source rule as `bordaCount`: the first explicit ranking
 * the reviewer gave, else its reviews ordered by mean rubric score. Unlike `bordaCount`, equal
 * rubric means stay tied here: a pairwise method must not invent a preference from an id.
 */
export function reviewerBallots(input: AggregationInput): ReviewerBallot[] {
  const { used } = usableReviews(input);
  const byReviewer = new Map<string, ReviewArtifact[]>();
  for (const r of used) byReviewer.set(r.reviewer_member_id, [...(byReviewer.get(r.reviewer_member_id) ?? []), r]);
  const ballots: ReviewerBallot[] = [];
  for (const reviewer of [...byReviewer.keys()].sort(byId)) {
    const reviews = byReviewer.get(reviewer) as ReviewArtifact[];
    const own = new Set(
      Object.entries(input.authors)
        .filter(([, author]) => author === reviewer)
        .map(([id]) => id),
    );
    const explicit = reviews
      .find((r) => r.ranking && r.ranking.length > 0)
      ?.ranking?.filter((id, i, all) => input.candidate_ids.includes(id) && !own.has(id) && all.indexOf(id) === i);
    if (explicit && explicit.length > 0) {
      ballots.push({ reviewer_member_id: reviewer, source: 'ranking', tiers: explicit.map((id) => [id]) });
      continue;
    }
    const scored = new Map<string, number>();
    for (const r of reviews) {
      const mean = meanRubricScore(r);
      // A reviewer that reviewed one candidate twice: the later review stands.
      if (mean !== null) scored.set(r.target_candidate_id, mean);
    }
    const levels = [...new Set(scored.values())].sort((a, b) => b - a);
    const tiers = levels.map((level) =>
      [...scored.entries()]
        .filter(([, s]) => s === level)
        .map(([id]) => id)
        .sort(byId),
    );
    if (tiers.length > 0) ballots.push({ reviewer_member_id: reviewer, source: 'rubric', tiers });
  }
  return ballots;
}

/** Position of each candidate on a ballot (tier index), absent when not reviewed. */
export function ballotPositions(ballot: ReviewerBallot): Map<string, number> {
  const pos = new Map<string, number>();
  ballot.tiers.forEach((tier, i) => tier.forEach((id) => pos.set(id, i)));
  return pos;
}

/**
 * The pairwise preference matrix: `wins[a][b]` = ballots that put a strictly above b, `ties[a][b]`
 * = ballots that hold both in one tier. Ballots that lack a or b say nothing about the pair.
 */
export interface PairwiseMatrix {
  candidate_ids: string[];
  wins: Record<string, Record<string, number>>;
  ties: Record<string, Record<string, number>>;
}

export function pairwiseMatrix(candidateIds: readonly string[], ballots: readonly ReviewerBallot[]): PairwiseMatrix {
  const ids = [...candidateIds];
  const zero = () =>
    Object.fromEntries(ids.map((id) => [id, Object.fromEntries(ids.map((o) => [o, 0]))])) as Record<string, Record<string, number>>;
  const wins = zero();
  const ties = zero();
  for (const ballot of ballots) {
    const pos = ballotPositions(ballot);
    for (const a of ids) {
      for (const b of ids) {
        if (a === b) continue;
        const pa = pos.get(a);
        const pb = pos.get(b);
        if (pa === undefined || pb === undefined) continue;
        if (pa < pb) wins[a][b] += 1;
        else if (pa === pb) ties[a][b] += 1;
      }
    }
  }
  return { candidate_ids: ids, wins, ties };
}

/** The candidate that beats every other one head to head, if there is one. */
export function condorcetWinner(m: PairwiseMatrix): string | null {
  for (const c of m.candidate_ids) {
    if (m.candidate_ids.every((o) => o === c || m.wins[c][o] > m.wins[o][c])) return c;
  }
  return null;
}

/**
 * The run's tie-break order: a permutation of the candidates drawn from the run's seed, so a
 * tie never falls to whichever id sorts first, and a replay breaks it the same way.
 */
export function tieBreakOrder(candidateIds: readonly string[], seed: string): string[] {
  return seededShuffle([...candidateIds].sort(byId), `${seed}:aggregation-tie-break`);
}
