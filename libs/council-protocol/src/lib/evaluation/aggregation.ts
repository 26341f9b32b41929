import { ConflictMap } from '../conflict-map';
import { AggregationInput, bordaCount, paretoFrontier } from '../run-aggregation';
import { fail, isRecord, join, optNum, record } from '../validation';
import { DroppedReview, PairwiseMatrix, ReviewerBallot, pairwiseMatrix, reviewerBallots, tieBreakOrder, usableReviews } from './ballots';
import { ChoiceModelFit, bradleyTerryEvents, fitChoiceModel, plackettLuceEvents } from './choice-models';

/** Run aggregation methods (spec 15.2). No method is the protocol default for every task. */
export const AGGREGATION_METHODS = [
  'borda',
  'schulze',
  'ranked-pairs',
  'bradley-terry',
  'plackett-luce',
  'weighted-rubric',
  'pareto-front',
  'test-first-elimination',
  'human-decides-after-conflict-map',
] as const;
export type AggregationMethodName = (typeof AGGREGATION_METHODS)[number];

/** Methods that order candidates themselves (test-first elimination hands its survivors to one). */
export type RankingMethod =
  | { method: 'borda' }
  | { method: 'schulze' }
  | { method: 'ranked-pairs' }
  | { method: 'bradley-terry'; prior_comparisons?: number }
  | { method: 'plackett-luce'; prior_comparisons?: number }
  | { method: 'weighted-rubric'; weights: Record<string, number> }
  | { method: 'pareto-front' };

/** The policy's aggregation: a method and its parameters. */
export type AggregationMethod =
  | RankingMethod
  | { method: 'test-first-elimination'; then: RankingMethod }
  | { method: 'human-decides-after-conflict-map' };

/** An executable test verdict for one candidate (15.1): verifiable evidence, not peer opinion. */
export interface ExecutableTestResult {
  candidate_id: string;
  passed: number;
  failed: number;
  evidence_refs: string[];
  /** The reviews that reported it, when it came from a run (named in an elimination's reason). */
  review_ids?: string[];
}

/** What an aggregation reads: current-run artifacts and the run's seed, nothing historical (16.1). */
export interface AggregationRequest extends AggregationInput {
  /** The run's seed (RunStarted): the only source of tie-breaks. */
  seed: string;
  test_results?: readonly ExecutableTestResult[];
  conflict_map?: ConflictMap | null;
  decision_owner?: string;
}

/** The four layers of spec 15. An aggregation reads the first and is the second. */
export const EVALUATION_LAYERS = ['artifact-evaluation', 'run-aggregation', 'capability-estimation', 'outcome-evaluation'] as const;
export type EvaluationLayer = (typeof EVALUATION_LAYERS)[number];

export type AggregationSignal = 'rankings' | 'rubric-vectors' | 'pairwise-preference' | 'executable-tests' | 'conflict-map';

/**
 * Spec 15 MUST: a binding does not collapse evaluation into one score without explanation.
 * Every result says which layers and signals fed it, whether it reduced each candidate to one
 * number and how, what was dropped, and which ties the seed broke.
 */
export interface AggregationExplanation {
  layers: EvaluationLayer[];
  /** Stated, and enforced by the request type: history never enters a run's aggregation. */
  layers_not_used: EvaluationLayer[];
  signals: AggregationSignal[];
  single_score: boolean;
  /** What the single score is and what was reduced to reach it; null when there is none. */
  collapse: string | null;
  steps: string[];
  ballots: number;
  reviews_used: number;
  dropped_reviews: DroppedReview[];
  /** Tiers of more than one candidate where the method selects: ordered by score, then the seed. */
  ties_broken: string[][];
  tie_break_order: string[];
}

export interface RankedCandidate {
  candidate_id: string;
  /** 0 = the method's winner set. */
  tier: number;
  score: number | null;
}

export interface HumanDecisionRequired {
  reason: string;
  decision_owner: string | null;
  /** Unresolved conflicts the human decides between. */
  conflict_ids: string[];
  candidate_ids: string[];
  /** For information only: no candidate here is dominated on the rubric. */
  frontier: string[];
}

export type AggregationDetail =
  | { method: 'borda'; points: Record<string, number> }
  | { method: 'schulze'; pairwise: PairwiseMatrix; strongest_paths: Record<string, Record<string, number>> }
  | { method: 'ranked-pairs'; pairwise: PairwiseMatrix; locked: [string, string][]; skipped: [string, string][] }
  | { method: 'bradley-terry' | 'plackett-luce'; fit: ChoiceModelFit }
  | { method: 'weighted-rubric'; weights: Record<string, number>; criterion_means: Record<string, Record<string, number>> }
  | { method: 'pareto-front'; dominated: { candidate_id: string; dominated_by: string[] }[] }
  | { method: 'test-first-elimination'; untested: string[]; then: AggregationDetail | null }
  | { method: 'human-decides-after-conflict-map' };

export interface RunAggregationResult {
  method: AggregationMethodName;
  seed: string;
  /** Best first; candidates in one tier are tied under the method. */
  tiers: string[][];
  /** The tiers flattened; within a tier by score, then by the seeded tie-break order. */
  ranking: RankedCandidate[];
  winners: string[];
  /** One candidate, when the method selects one (not for a Pareto front or a human decision). */
  selected: string | null;
  eliminated: { candidate_id: string; reason: string }[];
  human_decision: HumanDecisionRequired | null;
  explanation: AggregationExplanation;
  detail: AggregationDetail;
}

interface MethodOutput {
  tiers: string[][];
  scores: Record<string, number | null>;
  selects: boolean;
  eliminated: { candidate_id: string; reason: string }[];
  human_decision: HumanDecisionRequired | null;
  signals: AggregationSignal[];
  collapse: string | null;
  steps: string[];
  detail: AggregationDetail;
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Tiers from scores, best first; equal scores (to 1e-9 relative) tie; null scores last. */
function tiersByScore(ids: readonly string[], scores: Record<string, number | null>): string[][] {
  const scored = ids.filter((id) => scores[id] !== null).sort((a, b) => (scores[b] as number) - (scores[a] as number));
  const tiers: string[][] = [];
  for (const id of scored) {
    const last = tiers[tiers.length - 1];
    const ref = last ? (scores[last[0]] as number) : null;
    const s = scores[id] as number;
    if (ref !== null && Math.abs(ref - s) <= 1e-9 * Math.max(1, Math.abs(ref))) last.push(id);
    else tiers.push([id]);
  }
  const unscored = ids.filter((id) => scores[id] === null);
  if (unscored.length) tiers.push([...unscored]);
  return tiers;
}

/** Layers of a strict partial order: first the undominated, then the undominated of the rest. */
function peel(ids: readonly string[], above: (a: string, b: string) => boolean): string[][] {
  let rest = [...ids];
  const tiers: string[][] = [];
  while (rest.length) {
    const top = rest.filter((b) => !rest.some((a) => a !== b && above(a, b)));
    // A strict partial order always has a maximal element; guard against a cycle anyway.
    const layer = top.length ? top : rest;
    tiers.push(layer);
    rest = rest.filter((id) => !layer.includes(id));
  }
  return tiers;
}

function borda(input: AggregationRequest): MethodOutput {
  const result = bordaCount.aggregate(input);
  const points: Record<string, number> = {};
  if (result.kind === 'ranking') for (const r of result.ranking) points[r.candidate_id] = r.score;
  return {
    tiers: tiersByScore(input.candidate_ids, points),
    scores: points,
    selects: true,
    eliminated: [],
    human_decision: null,
    signals: ['rankings', 'rubric-vectors'],
    collapse: 'Borda points: each ballot gives a candidate (candidates on the ballot − 1 − position); a candidate scores its total.',
    steps: [
      "each reviewer's ballot is its explicit ranking, else its reviews ordered by mean rubric score (the rubric vector is averaged to one number per review)",
      'on a rubric ballot, equal means are ordered by candidate id (the library Borda rule)',
      'a candidate not on a ballot gets no points from it',
    ],
    detail: { method: 'borda', points },
  };
}

function schulze(input: AggregationRequest, ballots: ReviewerBallot[]): MethodOutput {
  const ids = [...input.candidate_ids];
  const m = pairwiseMatrix(ids, ballots);
  const p: Record<string, Record<string, number>> = {};
  for (const a of ids) {
    p[a] = {};
    for (const b of ids) if (a !== b) p[a][b] = m.wins[a][b] > m.wins[b][a] ? m.wins[a][b] : 0;
  }
  // Widest paths (Floyd–Warshall on min/max).
  for (const k of ids)
    for (const a of ids) if (a !== k) for (const b of ids) if (b !== a && b !== k) p[a][b] = Math.max(p[a][b], Math.min(p[a][k], p[k][b]));
  const beats = (a: string, b: string) => p[a][b] > p[b][a];
  const scores = Object.fromEntries(ids.map((a) => [a, ids.filter((b) => b !== a && beats(a, b)).length]));
  return {
    tiers: peel(ids, beats),
    scores,
    selects: true,
    eliminated: [],
    human_decision: null,
    signals: ['rankings', 'rubric-vectors', 'pairwise-preference'],
    collapse:
      'Schulze: the score is how many candidates a candidate beats by strongest path; the order comes from path strengths, not from the score.',
    steps: [
      'ballots as for Borda, but equal rubric means stay tied',
      'pairwise matrix: ballots that put a above b; a ballot lacking either says nothing',
      'link strength = winning votes of a majority; strongest paths by widest-path search',
      'a beats b when the strongest path a→b is stronger than b→a; tiers peel the undefeated',
    ],
    detail: { method: 'schulze', pairwise: m, strongest_paths: p },
  };
}

function rankedPairs(input: AggregationRequest, ballots: ReviewerBallot[], order: string[]): MethodOutput {
  const ids = [...input.candidate_ids];
  const m = pairwiseMatrix(ids, ballots);
  const rank = (id: string) => order.indexOf(id);
  const majorities: [string, string][] = [];
  for (const a of ids) for (const b of ids) if (a !== b && m.wins[a][b] > m.wins[b][a]) majorities.push([a, b]);
  // Strongest majority first; equal majorities by the seeded order (Tideman's tie-breaking ranking).
  majorities.sort(
    ([a, b], [c, d]) =>
      m.wins[c][d] - m.wins[d][c] - (m.wins[a][b] - m.wins[b][a]) || m.wins[c][d] - m.wins[a][b] || rank(a) - rank(c) || rank(d) - rank(b),
  );
  const edges = new Map<string, Set<string>>(ids.map((id) => [id, new Set<string>()]));
  const reaches = (from: string, to: string): boolean => {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const x = stack.pop() as string;
      if (x === to) return true;
      if (seen.has(x)) continue;
      seen.add(x);
      for (const y of edges.get(x) as Set<string>) stack.push(y);
    }
    return false;
  };
  const locked: [string, string][] = [];
  const skipped: [string, string][] = [];
  for (const [a, b] of majorities) {
    if (reaches(b, a)) skipped.push([a, b]);
    else {
      (edges.get(a) as Set<string>).add(b);
      locked.push([a, b]);
    }
  }
  const above = (a: string, b: string) => a !== b && reaches(a, b);
  const scores = Object.fromEntries(ids.map((a) => [a, ids.filter((b) => above(a, b)).length]));
  return {
    tiers: peel(ids, above),
    scores,
    selects: true,
    eliminated: [],
    human_decision: null,
    signals: ['rankings', 'rubric-vectors', 'pairwise-preference'],
    collapse:
      'Ranked Pairs: the score is how many candidates sit below a candidate in the locked graph; the order is the graph, not the score.',
    steps: [
      'ballots and pairwise matrix as for Schulze',
      'majorities sorted by margin, then winning votes, then the seeded order',
      'each majority is locked unless it closes a cycle with those already locked',
    ],
    detail: { method: 'ranked-pairs', pairwise: m, locked, skipped },
  };
}

function choiceModel(
  input: AggregationRequest,
  ballots: ReviewerBallot[],
  method: 'bradley-terry' | 'plackett-luce',
  prior?: number,
): MethodOutput {
  const ids = [...input.candidate_ids];
  const events = method === 'bradley-terry' ? bradleyTerryEvents(pairwiseMatrix(ids, ballots)) : plackettLuceEvents(ballots);
  const fit = fitChoiceModel(ids, events, prior === undefined ? {} : { prior_comparisons: prior });
  const steps =
    method === 'bradley-terry'
      ? [
          'ballots as for Schulze; every head-to-head preference is one comparison, a tie half to each side',
          'P(a beats b) = p_a / (p_a + p_b), fitted by maximum likelihood',
        ]
      : [
          'ballots as for Schulze; each ballot is a sequence of choices from what is left (ties: each chosen from the same set)',
          'P(i chosen from S) = p_i / Σ_S p, fitted by maximum likelihood',
        ];
  steps.push(
    `one virtual tie per pair as a prior (prior_comparisons ${prior ?? 1}); ${fit.converged ? 'converged' : 'did NOT converge'} after ${fit.iterations} iterations`,
  );
  return {
    tiers: tiersByScore(ids, fit.strengths),
    scores: fit.strengths,
    selects: true,
    eliminated: [],
    human_decision: null,
    signals: method === 'bradley-terry' ? ['rankings', 'rubric-vectors', 'pairwise-preference'] : ['rankings', 'rubric-vectors'],
    collapse: `${method === 'bradley-terry' ? 'Bradley–Terry' : 'Plackett–Luce'} strength (sums to 1): this run's preferences only, not a capability estimate.`,
    steps,
    detail: { method, fit },
  };
}

function criterionMeans(input: AggregationInput): Record<string, Record<string, number>> {
  const { used } = usableReviews(input);
  const sums: Record<string, Record<string, [number, number]>> = {};
  for (const r of used) {
    for (const [criterion, value] of Object.entries(r.rubric_scores)) {
      const cell = ((sums[r.target_candidate_id] ??= {})[criterion] ??= [0, 0]);
      cell[0] += value;
      cell[1] += 1;
    }
  }
  const means: Record<string, Record<string, number>> = {};
  for (const id of input.candidate_ids) means[id] = Object.fromEntries(Object.entries(sums[id] ?? {}).map(([c, [s, n]]) => [c, s / n]));
  return means;
}

function weightedRubric(input: AggregationRequest, weights: Record<string, number>): MethodOutput {
  const means = criterionMeans(input);
  const scores: Record<string, number | null> = {};
  const partial: string[] = [];
  const weighted = Object.keys(weights)
    .filter((c) => weights[c] > 0)
    .sort();
  for (const id of input.candidate_ids) {
    const present = weighted.filter((c) => c in means[id]);
    if (present.length < weighted.length && present.length > 0) partial.push(id);
    const total = present.reduce((s, c) => s + weights[c], 0);
    scores[id] = total > 0 ? present.reduce((s, c) => s + weights[c] * means[id][c], 0) / total : null;
  }
  const ignored = [...new Set(Object.values(means).flatMap((m) => Object.keys(m)))].filter((c) => !weighted.includes(c)).sort();
  const steps = [
    'per candidate, the mean of each rubric criterion over the reviews of it (self-reviews dropped)',
    `weighted mean over criteria: ${weighted.map((c) => `${c} × ${weights[c]}`).join(', ')}`,
  ];
  if (ignored.length) steps.push(`criteria scored but weighted 0, ignored: ${ignored.join(', ')}`);
  if (partial.length) steps.push(`weights renormalised over the criteria scored for: ${partial.join(', ')}`);
  if (input.candidate_ids.some((id) => scores[id] === null))
    steps.push('candidates with no weighted criterion scored have no score and rank last');
  return {
    tiers: tiersByScore(input.candidate_ids, scores),
    scores,
    selects: true,
    eliminated: [],
    human_decision: null,
    signals: ['rubric-vectors'],
    collapse:
      'Weighted rubric: the rubric vector is reduced to one weighted mean; trade-offs between criteria are fixed by the weights, not seen.',
    steps,
    detail: { method: 'weighted-rubric', weights: { ...weights }, criterion_means: means },
  };
}

function paretoFront(input: AggregationRequest): MethodOutput {
  let rest = [...input.candidate_ids];
  const tiers: string[][] = [];
  let dominated: { candidate_id: string; dominated_by: string[] }[] = [];
  while (rest.length) {
    const result = paretoFrontier.aggregate({ ...input, candidate_ids: rest });
    if (result.kind !== 'frontier') break;
    if (tiers.length === 0) dominated = result.dominated;
    tiers.push(result.frontier);
    rest = rest.filter((id) => !result.frontier.includes(id));
  }
  return {
    tiers,
    scores: Object.fromEntries(input.candidate_ids.map((id) => [id, null])),
    selects: false,
    eliminated: [],
    human_decision: null,
    signals: ['rubric-vectors'],
    collapse: null,
    steps: [
      'per candidate, the mean of each rubric criterion (0 where a criterion was never scored)',
      'tier 0 is the Pareto front: no other candidate is at least as good on every criterion and better on one',
      'later tiers are the fronts of what remains; no single score, no selection: the chair sees the trade-offs',
    ],
    detail: { method: 'pareto-front', dominated },
  };
}

function humanDecides(input: AggregationRequest): MethodOutput {
  const conflicts = input.conflict_map?.conflicts.filter((c) => c.status === 'unresolved') ?? [];
  const front = paretoFrontier.aggregate(input);
  return {
    tiers: [],
    scores: {},
    selects: false,
    eliminated: [],
    human_decision: {
      reason: input.conflict_map
        ? `a human decides after the conflict map ${input.conflict_map.conflict_map_id} (${conflicts.length} unresolved)`
        : 'a human decides after the conflict map; none was recorded yet',
      decision_owner: input.decision_owner ?? null,
      conflict_ids: conflicts.map((c) => c.conflict_id),
      candidate_ids: [...input.candidate_ids],
      frontier: front.kind === 'frontier' ? front.frontier : [],
    },
    signals: input.conflict_map ? ['conflict-map', 'rubric-vectors'] : ['rubric-vectors'],
    collapse: null,
    steps: ['no ranking and no winner: the decision owner chooses, with the conflict map and the rubric front for information'],
    detail: { method: 'human-decides-after-conflict-map' },
  };
}

/** Why a candidate is out: the failures and, from a run, the reviews and evidence that report them. */
function eliminationReason(r: ExecutableTestResult): string {
  const reason = `failed ${r.failed} executable test(s)`;
  if (!r.review_ids?.length) return reason;
  return `${reason} (passed ${r.passed}; reported by ${r.review_ids.join(', ')}; evidence ${r.evidence_refs.join(', ')})`;
}

function testFirst(
  input: AggregationRequest,
  then: RankingMethod,
  ballotsOf: (i: AggregationInput) => ReviewerBallot[],
  order: string[],
): MethodOutput {
  const results = new Map<string, ExecutableTestResult>();
  for (const r of input.test_results ?? []) if (input.candidate_ids.includes(r.candidate_id)) results.set(r.candidate_id, r);
  const eliminated = input.candidate_ids
    .filter((id) => (results.get(id)?.failed ?? 0) > 0)
    .map((id) => ({ candidate_id: id, reason: eliminationReason(results.get(id) as ExecutableTestResult) }));
  const out = new Set(eliminated.map((e) => e.candidate_id));
  const survivors = input.candidate_ids.filter((id) => !out.has(id));
  const untested = survivors.filter((id) => !results.has(id));
  const steps = [
    results.size
      ? `executable tests first: ${eliminated.length} of ${input.candidate_ids.length} candidates fail and are eliminated`
      : 'no executable test results: nothing eliminated',
  ];
  if (untested.length) steps.push(`kept without a test result: ${untested.join(', ')}`);
  if (survivors.length === 0) {
    steps.push('no candidate passes: nothing to rank (insufficient evidence, not a tie)');
    return {
      tiers: [],
      scores: {},
      selects: true,
      eliminated,
      human_decision: null,
      signals: ['executable-tests'],
      collapse: null,
      steps,
      detail: { method: 'test-first-elimination', untested, then: null },
    };
  }
  const sub: AggregationRequest = {
    ...input,
    candidate_ids: survivors,
    reviews: input.reviews.filter((r) => survivors.includes(r.target_candidate_id)),
  };
  const inner = runMethod(
    sub,
    then,
    ballotsOf(sub),
    order.filter((id) => survivors.includes(id)),
  );
  return {
    ...inner,
    eliminated: [...eliminated, ...inner.eliminated],
    signals: ['executable-tests', ...inner.signals],
    collapse: inner.collapse,
    steps: [...steps, `survivors ranked by ${then.method}:`, ...inner.steps],
    detail: { method: 'test-first-elimination', untested, then: inner.detail },
  };
}

function runMethod(input: AggregationRequest, method: AggregationMethod, ballots: ReviewerBallot[], order: string[]): MethodOutput {
  switch (method.method) {
    case 'borda':
      return borda(input);
    case 'schulze':
      return schulze(input, ballots);
    case 'ranked-pairs':
      return rankedPairs(input, ballots, order);
    case 'bradley-terry':
    case 'plackett-luce':
      return choiceModel(input, ballots, method.method, method.prior_comparisons);
    case 'weighted-rubric':
      return weightedRubric(input, method.weights);
    case 'pareto-front':
      return paretoFront(input);
    case 'test-first-elimination':
      return testFirst(input, method.then, reviewerBallots, order);
    case 'human-decides-after-conflict-map':
      return humanDecides(input);
    default: {
      const _exhaustive: never = method;
      return _exhaustive;
    }
  }
}

/**
 * Aggregate the run's current artifacts with the policy's method (spec 15.2). Pure and
 * deterministic: the same request and seed give the same result; ties are broken only by the
 * seeded order, and every result carries its explanation (spec 15).
 */
export function aggregateRun(input: AggregationRequest, method: AggregationMethod): RunAggregationResult {
  const candidateIds = [...new Set(input.candidate_ids)];
  const request: AggregationRequest = { ...input, candidate_ids: candidateIds };
  const order = tieBreakOrder(candidateIds, input.seed);
  const ballots = reviewerBallots(request);
  const out = runMethod(request, method, ballots, order);
  const rank = (id: string) => order.indexOf(id);
  const score = (id: string) => out.scores[id] ?? null;
  const tiers = out.tiers.map((tier) => [...tier].sort((a, b) => (score(b) ?? -Infinity) - (score(a) ?? -Infinity) || rank(a) - rank(b)));
  const ranking = tiers.flatMap((tier, t) => tier.map((candidate_id) => ({ candidate_id, tier: t, score: score(candidate_id) })));
  const winners = tiers.length ? [...tiers[0]].sort(byId) : [];
  const { used, dropped } = usableReviews(request);
  return {
    method: method.method,
    seed: input.seed,
    tiers,
    ranking,
    winners,
    selected: out.selects && ranking.length ? ranking[0].candidate_id : null,
    eliminated: out.eliminated,
    human_decision: out.human_decision,
    explanation: {
      layers: ['artifact-evaluation', 'run-aggregation'],
      layers_not_used: ['capability-estimation', 'outcome-evaluation'],
      signals: [...new Set(out.signals)],
      single_score: out.collapse !== null,
      collapse: out.collapse,
      steps: out.steps,
      ballots: ballots.length,
      reviews_used: used.length,
      dropped_reviews: dropped,
      ties_broken: out.selects ? tiers.filter((t) => t.length > 1) : [],
      tie_break_order: order,
    },
    detail: out.detail,
  };
}

const RANKING_METHODS = ['borda', 'schulze', 'ranked-pairs', 'bradley-terry', 'plackett-luce', 'weighted-rubric', 'pareto-front'] as const;

function parseRankingMethod(o: Record<string, unknown>, path: string, rubric: readonly string[]): RankingMethod {
  const name = o['method'];
  if (typeof name !== 'string' || !(RANKING_METHODS as readonly string[]).includes(name))
    fail(join(path, 'method'), `must be one of ${RANKING_METHODS.join(' | ')}`);
  switch (name as RankingMethod['method']) {
    case 'bradley-terry':
    case 'plackett-luce': {
      const prior = optNum(o, 'prior_comparisons', path, { min: Number.MIN_VALUE });
      return prior === undefined ? { method: name as 'bradley-terry' } : { method: name as 'bradley-terry', prior_comparisons: prior };
    }
    case 'weighted-rubric': {
      const raw = o['weights'];
      const weights: Record<string, number> = {};
      if (raw === undefined) for (const c of rubric) weights[c] = 1;
      else {
        const w = record(raw, join(path, 'weights'));
        for (const [c, v] of Object.entries(w)) {
          if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail(join(join(path, 'weights'), c), 'must be a number >= 0');
          weights[c] = v;
        }
      }
      if (!Object.values(weights).some((v) => v > 0)) fail(join(path, 'weights'), 'at least one criterion needs a positive weight');
      return { method: 'weighted-rubric', weights };
    }
    default:
      return { method: name as 'borda' | 'schulze' | 'ranked-pairs' | 'pareto-front' };
  }
}

/**
 * Validate an aggregation policy value: a method name or `{method, ...parameters}`. Weighted
 * rubric defaults to equal weights over `rubric` (the policy's rubric).
 */
export function parseAggregationMethod(input: unknown, path = 'aggregation', rubric: readonly string[] = []): AggregationMethod {
  const o: Record<string, unknown> = typeof input === 'string' ? { method: input } : record(input, path);
  const name = o['method'];
  if (typeof name !== 'string' || !(AGGREGATION_METHODS as readonly string[]).includes(name))
    fail(join(path, 'method'), `must be one of ${AGGREGATION_METHODS.join(' | ')}`);
  if (name === 'human-decides-after-conflict-map') return { method: name };
  if (name === 'test-first-elimination') {
    const then = o['then'] ?? 'borda';
    const inner: Record<string, unknown> =
      typeof then === 'string' ? { method: then } : isRecord(then) ? then : fail(join(path, 'then'), 'must be a ranking method');
    return { method: name, then: parseRankingMethod(inner, join(path, 'then'), rubric) };
  }
  return parseRankingMethod(o, path, rubric);
}
