import fc from 'fast-check';
import { CouncilError } from '../errors';
import { CapabilityRunInput } from './capability';
import {
  DEFAULT_CONFIDENCE_PROBABILITIES,
  Forecast,
  brierScore,
  calibrationReport,
  checkConfidenceProbabilities,
  empiricalConfidenceProbabilities,
  logLoss,
  murphyDecomposition,
  reliabilityBins,
  runForecasts,
} from './calibration';
import { memberFixture, runRecordFixture } from './evaluation-fixtures';
import { StructuredOutcome } from './outcomes';

function outcome(decision_id: string, verdict: StructuredOutcome['verdict'], id = 'o1'): StructuredOutcome {
  return {
    outcome_id: `${decision_id}:${id}`,
    decision_id,
    observed_at: '2025-03-01T00:00:00Z',
    recorded_by: 'owner-1',
    recorder_role: 'decision-owner',
    source_kind: verdict === 'unknown' ? 'unknown' : 'test-result',
    verdict,
    actions: [],
    expected_outcomes: [],
    reversal_signals: [],
    stop_loss_conditions: [],
    summary: verdict,
    evidence_refs: verdict === 'unknown' ? [] : ['ci-7'],
  };
}

function run(
  run_id: string,
  verdict: StructuredOutcome['verdict'] | null,
  opts: { confidence?: 'low' | 'medium' | 'high'; domain?: string; selected?: string; incorporated?: string[] } = {},
): CapabilityRunInput {
  const record = runRecordFixture({
    run_id,
    at: '2025-01-10T10:00:00Z',
    members: [memberFixture('ann'), memberFixture('bob', 'model-b'), memberFixture('cat', 'model-c')],
    candidates: [
      { id: `${run_id}-A`, author: 'ann', confidence: 'high' },
      { id: `${run_id}-B`, author: 'bob', confidence: 'low' },
    ],
    chair: 'cat',
    selected: opts.selected ?? `${run_id}-A`,
    incorporated: opts.incorporated,
    confidence: opts.confidence ?? 'medium',
  });
  return { record, domain: opts.domain ?? 'infra', outcomes: verdict ? [outcome(`${run_id}:decision`, verdict)] : [] };
}

const f = (probability: number, o: 0 | 1): Pick<Forecast, 'probability' | 'outcome'> => ({ probability, outcome: o });

describe('council:L5 calibration: Brier score, log loss, reliability (15.4)', () => {
  it('given forecasts, when scored, then Brier is the mean squared error and log loss the mean negative log-likelihood', () => {
    expect(brierScore([f(0.75, 1), f(0.25, 1)])).toBeCloseTo((0.0625 + 0.5625) / 2, 12);
    expect(logLoss([f(0.5, 0), f(0.5, 1)])).toBeCloseTo(Math.LN2, 12);
    expect(logLoss([f(0.75, 1)])).toBeCloseTo(-Math.log(0.75), 12);
    expect([brierScore([]), logLoss([])]).toEqual([null, null]);
  });

  it('given "high" right three times in four, when binned, then that bin is perfectly reliable (0.75 observed at 0.75)', () => {
    const fs = [f(0.75, 1), f(0.75, 1), f(0.75, 1), f(0.75, 0), f(0.25, 0)];
    expect(reliabilityBins(fs)).toEqual([
      { probability: 0.25, count: 1, observed_frequency: 0 },
      { probability: 0.75, count: 4, observed_frequency: 0.75 },
    ]);
    expect(murphyDecomposition(fs)?.reliability).toBeCloseTo((1 * 0.25 ** 2) / 5, 12);
  });

  it('given a run decided with high confidence whose outcome succeeded, when forecasts are read, then the chair and the chosen proposer are scored, not the loser', () => {
    const { forecasts, unscored } = runForecasts(run('r1', 'success', { confidence: 'high' }));
    expect(unscored).toBeNull();
    expect(forecasts.map((x) => [x.member_id, x.role, x.confidence, x.probability, x.outcome])).toEqual([
      ['cat', 'synthesizer', 'high', 0.75, 1],
      ['ann', 'proposer', 'high', 0.75, 1],
    ]);
  });

  it('given a synthesis incorporating both candidates, when it fails, then both authors are scored on their own stated confidence', () => {
    const { forecasts } = runForecasts(run('r1', 'failure', { selected: 'synthesis', incorporated: ['r1-A', 'r1-B'] }));
    expect(forecasts.filter((x) => x.role === 'proposer').map((x) => [x.member_id, x.probability, x.outcome])).toEqual([
      ['ann', 0.75, 0],
      ['bob', 0.25, 0],
    ]);
  });

  it.each([
    ['unknown', 'outcome unknown'],
    ['mixed', 'verdict mixed'],
    [null, 'no outcome yet'],
  ] as const)(
    'given an outcome %s, when forecasts are read, then nothing is scored and the reason is "%s" (18: no substitute)',
    (verdict, reason) => {
      expect(runForecasts(run('r1', verdict))).toEqual({ forecasts: [], unscored: { decision_id: 'r1:decision', reason } });
    },
  );

  it('given forecasts across members, roles and domains, when reported, then each member × role × domain is scored apart', () => {
    const forecasts = [
      ...runForecasts(run('r1', 'success', { confidence: 'high' })).forecasts,
      ...runForecasts(run('r2', 'failure', { confidence: 'high' })).forecasts,
      ...runForecasts(run('r3', 'failure', { confidence: 'low', domain: 'legal' })).forecasts,
    ];
    const report = calibrationReport([...forecasts, ...forecasts]);
    expect(report.map((s) => [s.member_id, s.role, s.domain, s.count])).toEqual([
      ['ann', 'proposer', 'infra', 2],
      ['ann', 'proposer', 'legal', 1],
      ['cat', 'synthesizer', 'infra', 2],
      ['cat', 'synthesizer', 'legal', 1],
    ]);
    const catInfra = report[2];
    expect(catInfra.brier).toBeCloseTo((0.25 ** 2 + 0.75 ** 2) / 2, 12);
    expect(catInfra.reliability).toEqual([{ confidence: 'high', probability: 0.75, count: 2, observed_frequency: 0.5 }]);
    expect(report[3]).toMatchObject({ brier: 0.0625, reliability: [{ confidence: 'low', observed_frequency: 0 }] });
  });

  it('given "high" succeeded in 1 of 6, when the empirical mapping is fitted, then high falls well below its stated 0.75, shrunk by the prior', () => {
    const fs = Array.from({ length: 6 }, (_, i) => ({
      ...runForecasts(run(`r${i}`, i === 0 ? 'success' : 'failure', { confidence: 'high' })).forecasts[0],
    }));
    const m = empiricalConfidenceProbabilities(fs);
    expect(m.high).toEqual({ probability: (1 + 2 * 0.75) / (6 + 2), count: 6 });
    expect(m.low).toEqual({ probability: 0.25, count: 0 });
  });

  it('given a mapping that does not increase, when checked, then it is refused', () => {
    expect(() => checkConfidenceProbabilities({ low: 0.5, medium: 0.5, high: 0.9 })).toThrow(CouncilError);
    expect(() => checkConfidenceProbabilities({ ...DEFAULT_CONFIDENCE_PROBABILITIES, high: 1 })).toThrow(CouncilError);
  });

  const forecastsArb = fc
    .array(fc.tuple(fc.constantFrom(0.25, 0.5, 0.75), fc.constantFrom<0 | 1>(0, 1)), { minLength: 1, maxLength: 40 })
    .map((xs) => xs.map(([p, o]) => f(p, o)));

  it('property: Brier = reliability − resolution + uncertainty (Murphy), each term in [0, 1]', () => {
    fc.assert(
      fc.property(forecastsArb, (fs) => {
        const m = murphyDecomposition(fs) as NonNullable<ReturnType<typeof murphyDecomposition>>;
        expect(m.reliability - m.resolution + m.uncertainty).toBeCloseTo(brierScore(fs) as number, 12);
        for (const v of Object.values(m)) expect(v >= 0 && v <= 1).toBe(true);
      }),
    );
  });

  it('property: the Brier score and log loss are proper: no constant forecast beats the observed frequency', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<0 | 1>(0, 1), { minLength: 1, maxLength: 30 }),
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        (outcomes, p) => {
          const q = outcomes.reduce<number>((a, b) => a + b, 0) / outcomes.length;
          const at = (x: number) => outcomes.map((o) => f(x, o));
          expect(brierScore(at(q)) as number).toBeLessThanOrEqual((brierScore(at(p)) as number) + 1e-12);
          if (q > 0 && q < 1) expect(logLoss(at(q)) as number).toBeLessThanOrEqual((logLoss(at(p)) as number) + 1e-12);
        },
      ),
    );
  });
});
