import fc from 'fast-check';
import { CouncilError } from '../errors';
import { ReviewArtifact } from '../review-artifact';
import { AggregationMethod, AggregationRequest, aggregateRun, parseAggregationMethod } from './aggregation';
import { condorcetWinner, pairwiseMatrix, reviewerBallots } from './ballots';
import { bradleyTerryEvents, fitChoiceModel } from './choice-models';

const review = (reviewer: string, target: string, scores: Record<string, number>, ranking?: string[]): ReviewArtifact => ({
  review_id: `${reviewer}-on-${target}`,
  reviewer_member_id: reviewer,
  target_candidate_id: target,
  rubric_scores: scores,
  strengths: [],
  material_issues: [],
  ...(ranking ? { ranking } : {}),
});

/** Ballots as explicit rankings, `count` reviewers each: the classic social-choice fixtures. */
function rankedRequest(groups: [number, string[]][], seed = 'seed-1'): AggregationRequest {
  const candidate_ids = [...new Set(groups.flatMap(([, order]) => order))].sort();
  const reviews: ReviewArtifact[] = [];
  let n = 0;
  for (const [count, order] of groups) {
    for (let i = 0; i < count; i++) {
      const reviewer = `voter-${n++}`;
      order.forEach((target, pos) =>
        reviews.push(review(reviewer, target, { overall: order.length - pos }, pos === 0 ? order : undefined)),
      );
    }
  }
  return { candidate_ids, reviews, authors: Object.fromEntries(candidate_ids.map((id) => [id, `author-${id}`])), seed };
}

const ALL_METHODS: AggregationMethod[] = [
  { method: 'borda' },
  { method: 'schulze' },
  { method: 'ranked-pairs' },
  { method: 'bradley-terry' },
  { method: 'plackett-luce' },
  { method: 'weighted-rubric', weights: { evidence: 2, correctness: 1 } },
  { method: 'pareto-front' },
  { method: 'test-first-elimination', then: { method: 'schulze' } },
  { method: 'human-decides-after-conflict-map' },
];

describe('spec 15.2 run aggregation: pairwise methods on the classic fixtures', () => {
  // The Tennessee capital example: Nashville is the Condorcet winner.
  const tennessee = rankedRequest([
    [42, ['Memphis', 'Nashville', 'Chattanooga', 'Knoxville']],
    [26, ['Nashville', 'Chattanooga', 'Knoxville', 'Memphis']],
    [15, ['Chattanooga', 'Knoxville', 'Nashville', 'Memphis']],
    [17, ['Knoxville', 'Chattanooga', 'Nashville', 'Memphis']],
  ]);
  it('given the Tennessee ballots, when aggregated by Schulze and Ranked Pairs, then both give Nashville > Chattanooga > Knoxville > Memphis', () => {
    for (const method of ['schulze', 'ranked-pairs'] as const) {
      const r = aggregateRun(tennessee, { method });
      expect(r.tiers).toEqual([['Nashville'], ['Chattanooga'], ['Knoxville'], ['Memphis']]);
      expect(r.selected).toBe('Nashville');
    }
  });
  it('given the Tennessee ballots, when Ranked Pairs locks majorities, then it locks the six in margin order and skips none', () => {
    const r = aggregateRun(tennessee, { method: 'ranked-pairs' });
    expect(r.detail.method === 'ranked-pairs' && r.detail.skipped).toEqual([]);
    expect(r.detail.method === 'ranked-pairs' && r.detail.locked[0]).toEqual(['Chattanooga', 'Knoxville']); // 83 to 17
  });
  it('given the Tennessee ballots, when aggregated by Borda, then Nashville > Chattanooga > Memphis > Knoxville on points 194, 173, 126, 107', () => {
    const r = aggregateRun(tennessee, { method: 'borda' });
    expect(r.tiers).toEqual([['Nashville'], ['Chattanooga'], ['Memphis'], ['Knoxville']]);
    expect(r.selected).toBe('Nashville');
    expect(r.detail.method === 'borda' && r.detail.points).toEqual({ Nashville: 194, Chattanooga: 173, Memphis: 126, Knoxville: 107 });
  });
  it("given Schulze's 45-voter example with a majority cycle, when aggregated, then E > A > C > B > D", () => {
    const r = aggregateRun(
      rankedRequest([
        [5, ['A', 'C', 'B', 'E', 'D']],
        [5, ['A', 'D', 'E', 'C', 'B']],
        [8, ['B', 'E', 'D', 'A', 'C']],
        [3, ['C', 'A', 'B', 'E', 'D']],
        [7, ['C', 'A', 'E', 'B', 'D']],
        [2, ['C', 'B', 'A', 'D', 'E']],
        [7, ['D', 'C', 'E', 'B', 'A']],
        [8, ['E', 'B', 'A', 'D', 'C']],
      ]),
      { method: 'schulze' },
    );
    expect(condorcetWinner(r.detail.method === 'schulze' ? r.detail.pairwise : (undefined as never))).toBeNull();
    expect(r.tiers).toEqual([['E'], ['A'], ['C'], ['B'], ['D']]);
    expect(r.detail.method === 'schulze' && r.detail.strongest_paths['E']['D']).toBe(31);
  });
  it('given a perfect three-way cycle, when aggregated by Schulze, then all three tie and only the seed picks, and says so', () => {
    const cycle = (seed: string) =>
      rankedRequest(
        [
          [1, ['A', 'B', 'C']],
          [1, ['B', 'C', 'A']],
          [1, ['C', 'A', 'B']],
        ],
        seed,
      );
    const picks = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = aggregateRun(cycle(`s${i}`), { method: 'schulze' });
      expect(r.winners).toEqual(['A', 'B', 'C']);
      expect(r.explanation.ties_broken).toEqual([r.ranking.map((x) => x.candidate_id)]);
      expect(r.explanation.tie_break_order.filter((id) => r.winners.includes(id))[0]).toBe(r.selected);
      picks.add(r.selected as string);
    }
    expect(picks.size).toBeGreaterThan(1);
  });
});

describe('spec 15.2 Bradley–Terry and Plackett–Luce', () => {
  it('given a beats b on 3 ballots and b beats a on 1, when fitted with one virtual tie, then P(a beats b) = 3.5 / 5', () => {
    const r = aggregateRun(
      rankedRequest([
        [3, ['a', 'b']],
        [1, ['b', 'a']],
      ]),
      { method: 'bradley-terry' },
    );
    const s = r.detail.method === 'bradley-terry' ? r.detail.fit.strengths : {};
    expect(s['a'] / (s['a'] + s['b'])).toBeCloseTo(0.7, 9);
    expect(r.selected).toBe('a');
  });
  it('given two candidates, when fitted by Plackett–Luce, then it agrees with Bradley–Terry (pairwise rankings are the same likelihood)', () => {
    const req = rankedRequest([
      [4, ['a', 'b']],
      [2, ['b', 'a']],
    ]);
    const bt = aggregateRun(req, { method: 'bradley-terry' });
    const pl = aggregateRun(req, { method: 'plackett-luce' });
    const strengths = (r: typeof bt) =>
      r.detail.method === 'bradley-terry' || r.detail.method === 'plackett-luce' ? r.detail.fit.strengths : {};
    expect(strengths(pl)['a']).toBeCloseTo(strengths(bt)['a'], 9);
  });
  it('given no prior and a candidate that wins everything, when fitted, then the fit does not converge and says so', () => {
    const req = rankedRequest([[3, ['a', 'b', 'c']]]);
    const fit = fitChoiceModel(req.candidate_ids, bradleyTerryEvents(pairwiseMatrix(req.candidate_ids, reviewerBallots(req))), {
      prior_comparisons: 0,
      max_iterations: 200,
    });
    expect(fit.converged).toBe(false);
  });
});

describe('spec 15.2 weighted rubric, test-first elimination, human decision', () => {
  const req: AggregationRequest = {
    candidate_ids: ['A', 'B', 'C'],
    authors: { A: 'a', B: 'b', C: 'c' },
    seed: 'seed-1',
    reviews: [
      review('b', 'A', { evidence: 5, correctness: 1 }),
      review('c', 'A', { evidence: 5, correctness: 1 }),
      review('a', 'B', { evidence: 2, correctness: 5 }),
      review('c', 'B', { evidence: 2, correctness: 5 }),
      review('a', 'C', { evidence: 1, correctness: 1 }),
      review('b', 'C', { evidence: 1, correctness: 1 }),
      review('a', 'A', { evidence: 0, correctness: 0 }),
    ],
  };
  it('given evidence weighted 3 to 1, when aggregated, then A wins; reversed, B wins; the explanation names the weights and the self-review', () => {
    const evidence = aggregateRun(req, { method: 'weighted-rubric', weights: { evidence: 3, correctness: 1 } });
    const correctness = aggregateRun(req, { method: 'weighted-rubric', weights: { evidence: 1, correctness: 3 } });
    expect(evidence.selected).toBe('A');
    expect(evidence.ranking[0].score).toBeCloseTo((3 * 5 + 1) / 4, 12);
    expect(correctness.selected).toBe('B');
    expect(evidence.explanation.single_score).toBe(true);
    expect(evidence.explanation.steps.join(' ')).toContain('evidence × 3');
    expect(evidence.explanation.dropped_reviews).toEqual([{ review_id: 'a-on-A', reason: 'self-review' }]);
  });
  it('given A fails an executable test, when test-first elimination runs, then A is out whatever its rubric, and B wins', () => {
    const r = aggregateRun(
      {
        ...req,
        test_results: [
          { candidate_id: 'A', passed: 3, failed: 1, evidence_refs: ['ci-1'] },
          { candidate_id: 'B', passed: 4, failed: 0, evidence_refs: ['ci-2'] },
        ],
      },
      { method: 'test-first-elimination', then: { method: 'weighted-rubric', weights: { evidence: 3, correctness: 1 } } },
    );
    expect(r.eliminated).toEqual([{ candidate_id: 'A', reason: 'failed 1 executable test(s)' }]);
    expect(r.selected).toBe('B');
    expect(r.detail.method === 'test-first-elimination' && r.detail.untested).toEqual(['C']);
    expect(r.explanation.signals).toContain('executable-tests');
  });
  it('given every candidate fails, when test-first elimination runs, then nothing is ranked and nothing selected', () => {
    const r = aggregateRun(
      { ...req, test_results: req.candidate_ids.map((candidate_id) => ({ candidate_id, passed: 0, failed: 2, evidence_refs: [] })) },
      { method: 'test-first-elimination', then: { method: 'borda' } },
    );
    expect([r.tiers, r.winners, r.selected, r.eliminated.length]).toEqual([[], [], null, 3]);
  });
  it('given the Pareto front, when aggregated, then A and B are tier 0, C tier 1, no single score and no selection', () => {
    const r = aggregateRun(req, { method: 'pareto-front' });
    expect(r.tiers).toEqual([expect.arrayContaining(['A', 'B']), ['C']]);
    expect([r.selected, r.explanation.single_score, r.explanation.collapse]).toEqual([null, false, null]);
  });
  it('given a value conflict, when the human decides after the conflict map, then no winner, the owner and the unresolved conflicts are named', () => {
    const r = aggregateRun(
      {
        ...req,
        decision_owner: 'owner-1',
        conflict_map: {
          conflict_map_id: 'cm-1',
          conflicts: [
            {
              conflict_id: 'conflict-01',
              type: 'value',
              positions: ['A', 'B'],
              description: 'speed or safety',
              value_owner: 'owner-1',
              decision_impact: 'high',
              status: 'unresolved',
            },
            {
              conflict_id: 'conflict-02',
              type: 'fact',
              positions: ['A', 'C'],
              description: 'x',
              discriminating_evidence: 'y',
              decision_impact: 'low',
              status: 'resolved',
            },
          ],
        },
      },
      { method: 'human-decides-after-conflict-map' },
    );
    expect([r.winners, r.selected, r.ranking]).toEqual([[], null, []]);
    expect(r.human_decision).toMatchObject({ decision_owner: 'owner-1', conflict_ids: ['conflict-01'], candidate_ids: ['A', 'B', 'C'] });
    expect(r.human_decision?.frontier).toEqual(expect.arrayContaining(['A', 'B']));
  });
  it.each(ALL_METHODS.map((m) => [m.method, m] as const))(
    'given %s, then the explanation states the layers used and that capability and outcomes were not',
    (_name, method) => {
      const r = aggregateRun(req, method);
      expect(r.explanation.layers).toEqual(['artifact-evaluation', 'run-aggregation']);
      expect(r.explanation.layers_not_used).toEqual(['capability-estimation', 'outcome-evaluation']);
      expect(r.explanation.steps.length).toBeGreaterThan(0);
      expect(r.explanation.single_score).toBe(r.explanation.collapse !== null);
    },
  );
});

describe('aggregation policy values', () => {
  it('given a name or an object, when parsed, then the method and parameters come back, defaults filled', () => {
    expect(parseAggregationMethod('schulze')).toEqual({ method: 'schulze' });
    expect(parseAggregationMethod({ method: 'weighted-rubric' }, 'aggregation', ['evidence', 'risk'])).toEqual({
      method: 'weighted-rubric',
      weights: { evidence: 1, risk: 1 },
    });
    expect(parseAggregationMethod({ method: 'test-first-elimination' })).toEqual({
      method: 'test-first-elimination',
      then: { method: 'borda' },
    });
    expect(parseAggregationMethod({ method: 'plackett-luce', prior_comparisons: 2 })).toEqual({
      method: 'plackett-luce',
      prior_comparisons: 2,
    });
  });
  it.each([
    [{ method: 'elo' }, 'aggregation.method'],
    [{ method: 'weighted-rubric', weights: { evidence: -1 } }, 'aggregation.weights.evidence'],
    [{ method: 'weighted-rubric', weights: { evidence: 0 } }, 'aggregation.weights'],
    [{ method: 'test-first-elimination', then: 'human-decides-after-conflict-map' }, 'aggregation.then.method'],
    [{ method: 'bradley-terry', prior_comparisons: 0 }, 'aggregation.prior_comparisons'],
  ])('given %j, when parsed, then SCHEMA_VIOLATION at %s', (input, field) => {
    let err: unknown;
    try {
      parseAggregationMethod(input);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CouncilError);
    expect((err as CouncilError).field).toBe(field);
  });
});

// ---------------------------------------------------------------- properties

const CRITERIA = ['evidence', 'correctness'];

/** Any request: some reviewers author candidates, reviews are partial, rankings optional. */
const anyRequest = fc
  .record({
    n: fc.integer({ min: 2, max: 5 }),
    k: fc.integer({ min: 1, max: 6 }),
    seed: fc.string({ maxLength: 6 }),
    cells: fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 })), {
      minLength: 30,
      maxLength: 30,
    }),
    rankings: fc.array(fc.option(fc.array(fc.nat(), { minLength: 5, maxLength: 5 }), { nil: undefined }), { minLength: 6, maxLength: 6 }),
    reviewersAuthor: fc.boolean(),
  })
  .map(({ n, k, seed, cells, rankings, reviewersAuthor }): AggregationRequest => {
    const candidate_ids = Array.from({ length: n }, (_, i) => `c${i}`);
    const authors = Object.fromEntries(candidate_ids.map((id, i) => [id, reviewersAuthor ? `r${i}` : `author-${i}`]));
    const reviews: ReviewArtifact[] = [];
    for (let r = 0; r < k; r++) {
      const mine = candidate_ids.filter((_id, i) => cells[r * 5 + i][0]);
      const keys = rankings[r];
      const ranking = keys ? [...mine].sort((a, b) => keys[Number(a.slice(1))] - keys[Number(b.slice(1))] || (a < b ? -1 : 1)) : undefined;
      for (const id of mine) {
        const [, e, c] = cells[r * 5 + Number(id.slice(1))];
        reviews.push(review(`r${r}`, id, { evidence: e, correctness: c }, ranking));
      }
    }
    return { candidate_ids, authors, reviews, seed };
  });

/**
 * A unanimous request: external reviewers each review every candidate, and each scores `winner`
 * strictly above every other candidate on every criterion (and ranks it first when it ranks).
 */
const unanimousRequest = fc
  .record({
    n: fc.integer({ min: 2, max: 5 }),
    k: fc.integer({ min: 1, max: 5 }),
    w: fc.nat(),
    seed: fc.string({ maxLength: 6 }),
    scores: fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 })), { minLength: 25, maxLength: 25 }),
    ranks: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  })
  .map(({ n, k, w, seed, scores, ranks }) => {
    const candidate_ids = Array.from({ length: n }, (_, i) => `c${i}`);
    const winner = candidate_ids[w % n];
    const reviews: ReviewArtifact[] = [];
    for (let r = 0; r < k; r++) {
      const others = candidate_ids.filter((id) => id !== winner);
      const ranking = ranks[r] ? [winner, ...others.reverse()] : undefined;
      for (const id of candidate_ids) {
        const [e, c] = id === winner ? [5, 5] : scores[r * 5 + Number(id.slice(1))];
        reviews.push(review(`r${r}`, id, { evidence: e, correctness: c }, ranking));
      }
    }
    const request: AggregationRequest = {
      candidate_ids,
      authors: Object.fromEntries(candidate_ids.map((id) => [id, `author-${id}`])),
      reviews,
      seed,
    };
    return { request, winner };
  });

const anyMethod = fc.oneof(
  fc.constantFrom<AggregationMethod>(...ALL_METHODS),
  fc
    .record({ evidence: fc.integer({ min: 1, max: 5 }), correctness: fc.integer({ min: 0, max: 5 }) })
    .map((weights): AggregationMethod => ({ method: 'weighted-rubric', weights })),
);

describe('properties of the aggregation methods (spec 15.2)', () => {
  it('property: when a Condorcet winner exists, Schulze and Ranked Pairs choose it, alone', () => {
    fc.assert(
      fc.property(anyRequest, (req) => {
        const c = condorcetWinner(pairwiseMatrix(req.candidate_ids, reviewerBallots(req)));
        fc.pre(c !== null);
        for (const method of ['schulze', 'ranked-pairs'] as const) {
          const r = aggregateRun(req, { method });
          expect(r.winners).toEqual([c]);
          expect(r.selected).toBe(c);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('property: unanimity: when every reviewer puts one candidate strictly first, every method that ranks puts it alone first', () => {
    fc.assert(
      fc.property(unanimousRequest, anyMethod, ({ request, winner }, method) => {
        const r = aggregateRun(
          {
            ...request,
            test_results: request.candidate_ids.map((candidate_id) => ({ candidate_id, passed: 1, failed: 0, evidence_refs: [] })),
          },
          method,
        );
        if (method.method === 'human-decides-after-conflict-map') {
          // No winner by design; the front it shows the human is the unanimous choice alone.
          expect(r.winners).toEqual([]);
          expect(r.human_decision?.frontier).toEqual([winner]);
          return;
        }
        expect(r.winners).toEqual([winner]);
        if (method.method !== 'pareto-front') expect(r.selected).toBe(winner);
      }),
      { numRuns: 300 },
    );
  });

  it('property: the Pareto front holds exactly the candidates no other candidate dominates on the rubric means', () => {
    fc.assert(
      fc.property(anyRequest, (req) => {
        const used = req.reviews.filter((rv) => req.authors[rv.target_candidate_id] !== rv.reviewer_member_id);
        const mean = (id: string, c: string) => {
          const xs = used.filter((rv) => rv.target_candidate_id === id && c in rv.rubric_scores).map((rv) => rv.rubric_scores[c]);
          return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
        };
        const criteria = CRITERIA.filter((c) => used.some((rv) => c in rv.rubric_scores));
        const dominates = (a: string, b: string) =>
          criteria.every((c) => mean(a, c) >= mean(b, c)) && criteria.some((c) => mean(a, c) > mean(b, c));
        const undominated = req.candidate_ids.filter((b) => !req.candidate_ids.some((a) => a !== b && dominates(a, b)));
        const r = aggregateRun(req, { method: 'pareto-front' });
        expect([...r.tiers[0]].sort()).toEqual(undominated);
        expect(r.tiers.flat().sort()).toEqual([...req.candidate_ids].sort());
      }),
      { numRuns: 300 },
    );
  });

  it('property: same input and seed give the same output, also from a JSON copy; the seed only reorders within tiers', () => {
    fc.assert(
      fc.property(anyRequest, anyMethod, fc.string({ maxLength: 6 }), (req, method, otherSeed) => {
        const a = aggregateRun(req, method);
        expect(aggregateRun(JSON.parse(JSON.stringify(req)), method)).toEqual(a);
        if (method.method === 'ranked-pairs') return; // the seed also orders equal majorities
        const b = aggregateRun({ ...req, seed: otherSeed }, method);
        expect(b.tiers.map((t) => [...t].sort())).toEqual(a.tiers.map((t) => [...t].sort()));
      }),
      { numRuns: 300 },
    );
  });

  it('property: Bradley–Terry and Plackett–Luce converge to a stationary point, and a candidate that wins every comparison is ranked first', () => {
    const strictBallots = fc
      .record({
        n: fc.integer({ min: 2, max: 5 }),
        k: fc.integer({ min: 1, max: 8 }),
        w: fc.nat(),
        orders: fc.array(fc.array(fc.nat(), { minLength: 5, maxLength: 5 }), { minLength: 8, maxLength: 8 }),
      })
      .map(({ n, k, w, orders }) => {
        const ids = Array.from({ length: n }, (_, i) => `c${i}`);
        const winner = ids[w % n];
        const groups: [number, string[]][] = [];
        for (let r = 0; r < k; r++) {
          const rest = ids
            .filter((id) => id !== winner)
            .sort((a, b) => orders[r][Number(a.slice(1))] - orders[r][Number(b.slice(1))] || (a < b ? -1 : 1));
          groups.push([1, [winner, ...rest]]);
        }
        return { request: rankedRequest(groups), winner };
      });
    fc.assert(
      fc.property(strictBallots, fc.constantFrom('bradley-terry' as const, 'plackett-luce' as const), ({ request, winner }, method) => {
        const r = aggregateRun(request, { method });
        const fit = r.detail.method === method ? r.detail.fit : undefined;
        expect(fit?.converged).toBe(true);
        expect(fit?.max_score_residual).toBeLessThan(1e-6);
        expect(Object.values(fit?.strengths ?? {}).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
        expect(r.winners).toEqual([winner]);
      }),
      { numRuns: 200 },
    );
  });
});
