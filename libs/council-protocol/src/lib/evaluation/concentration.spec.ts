import fc from 'fast-check';
import { concentrationAudit, concentrationIndex, periodOf } from './concentration';
import { RunFixture, memberFixture, runRecordFixture } from './evaluation-fixtures';

const ann = memberFixture('ann', 'model-a');
const bob = memberFixture('bob', 'model-b');
const cat = memberFixture('cat', 'model-a');

function decided(run_id: string, at: string, over: Partial<RunFixture> = {}) {
  return runRecordFixture({
    run_id,
    at,
    members: [ann, bob, cat],
    candidates: [
      { id: `${run_id}-A`, author: 'ann' },
      { id: `${run_id}-B`, author: 'bob' },
      { id: `${run_id}-C`, author: 'cat' },
    ],
    reviews: [{ reviewer: 'cat', target: `${run_id}-A`, high: true }],
    chair: 'ann',
    selected: `${run_id}-A`,
    ...over,
  });
}

describe('spec 16.7 concentration audit (council:L4)', () => {
  it('given weights, when indexed, then HHI is the sum of squared shares and the normalized index runs from 0 (even) to 1 (one holder)', () => {
    expect(
      concentrationIndex(
        new Map([
          ['a', 1],
          ['b', 1],
          ['c', 1],
          ['d', 1],
        ]),
      ),
    ).toMatchObject({ hhi: 0.25, normalized_hhi: 0 });
    expect(
      concentrationIndex(
        new Map([
          ['a', 3],
          ['b', 1],
        ]),
      ),
    ).toMatchObject({ hhi: 0.625, normalized_hhi: 0.25 });
    expect(concentrationIndex(new Map([['a', 5]]))).toMatchObject({ hhi: 1, normalized_hhi: 1 });
    expect(concentrationIndex(new Map())).toMatchObject({ total: 0, hhi: null });
  });

  it('given instants, when bucketed, then periods are UTC and weeks are ISO 8601', () => {
    expect(periodOf('2025-01-01T10:00:00Z', 'week')).toBe('2025-W01');
    expect(periodOf('2024-12-30T00:00:00Z', 'week')).toBe('2025-W01');
    expect(periodOf('2021-01-03T23:00:00Z', 'week')).toBe('2020-W53');
    expect(periodOf('2025-05-31T23:30:00-02:00', 'month')).toBe('2025-06');
    expect(periodOf('2025-08-15T00:00:00Z', 'quarter')).toBe('2025-Q3');
  });

  it('given six January runs where ann is always selected and always chairs, when audited, then selected and chairs are concentrated and the section 16 loop is reported', () => {
    const runs = Array.from({ length: 6 }, (_, i) => ({ record: decided(`r${i}`, `2025-01-${10 + i}T10:00:00Z`), domain: 'infra' }));
    const audit = concentrationAudit(runs);
    expect(audit.cells).toHaveLength(1);
    const cell = audit.cells[0];
    expect([cell.domain, cell.period, cell.run_ids.length]).toEqual(['infra', '2025-01', 6]);
    expect(cell.dimensions.proposes).toMatchObject({ total: 18, normalized_hhi: 0 });
    expect(cell.dimensions.selected).toMatchObject({ total: 6, hhi: 1, shares: [{ who: 'ann', share: 1 }] });
    expect(cell.dimensions.chairs.shares).toEqual([{ who: 'ann', weight: 6, share: 1 }]);
    expect(cell.findings).toEqual(
      expect.arrayContaining([
        expect.stringContaining('selected concentrated: ann holds 100%'),
        expect.stringContaining('ann is both most selected and most often chair'),
      ]),
    );
  });

  it('given the same runs counted by model family, when audited, then ann and cat (one family) are one voice in proposing', () => {
    const runs = Array.from({ length: 3 }, (_, i) => ({ record: decided(`r${i}`, `2025-01-${10 + i}T10:00:00Z`), domain: 'infra' }));
    const cell = concentrationAudit(runs, { subject: 'model_family' }).cells[0];
    expect(cell.dimensions.proposes.shares).toEqual([
      { who: 'model-a', weight: 6, share: 6 / 9 },
      { who: 'model-b', weight: 3, share: 3 / 9 },
    ]);
  });

  it('given surviving dissent citing a review issue, a candidate and an unknown id, when audited, then each is attributed to its voice or counted unattributed', () => {
    const record = decided('r1', '2025-01-10T10:00:00Z', {
      dissent: [
        { description: 'cat warned it breaks', refs: ['r1:rev-cat-on-r1-A#issue-1'] },
        'r1-B remains a better fit for the constraint',
        'nobody in particular',
      ],
      selected: 'r1-A',
    });
    const cell = concentrationAudit([{ record, domain: 'infra' }]).cells[0];
    expect(cell.dimensions.dissent_survives.shares).toEqual([
      { who: 'bob', weight: 1, share: 0.5 },
      { who: 'cat', weight: 1, share: 0.5 },
    ]);
    expect(cell.unattributed_dissent).toBe(1);
  });

  it('given a synthesis that incorporated two candidates, when audited, then the one selection is shared between their authors', () => {
    const record = decided('r1', '2025-01-10T10:00:00Z', { selected: 'synthesis', incorporated: ['r1-A', 'r1-B'] });
    expect(concentrationAudit([{ record, domain: 'infra' }]).cells[0].dimensions.selected.shares).toEqual([
      { who: 'ann', weight: 0.5, share: 0.5 },
      { who: 'bob', weight: 0.5, share: 0.5 },
    ]);
  });

  it('given runs in two domains and two months and one undecided run, when audited, then each domain × month is its own cell and the undecided run is skipped with its state', () => {
    const audit = concentrationAudit([
      { record: decided('r1', '2025-01-10T10:00:00Z'), domain: 'infra' },
      { record: decided('r2', '2025-02-10T10:00:00Z'), domain: 'infra' },
      { record: decided('r3', '2025-01-12T10:00:00Z'), domain: 'legal' },
      {
        record: decided('r4', '2025-01-12T10:00:00Z', { selected: 'no-decision', terminal_state: 'abstained-insufficient-evidence' }),
        domain: 'legal',
      },
    ]);
    expect(audit.cells.map((c) => [c.domain, c.period, c.run_ids])).toEqual([
      ['infra', '2025-01', ['r1']],
      ['infra', '2025-02', ['r2']],
      ['legal', '2025-01', ['r3']],
    ]);
    expect(audit.skipped).toEqual([{ run_id: 'r4', reason: 'not decided (abstained-insufficient-evidence)' }]);
  });

  it('property: HHI lies in [1/n, 1], the normalized index in [0, 1], shares sum to 1, and the audit does not depend on run order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.integer({ min: 1, max: 9 })), { minLength: 1, maxLength: 12 }),
        (pairs) => {
          const m = new Map<string, number>();
          for (const [k, w] of pairs) m.set(k, (m.get(k) ?? 0) + w);
          const idx = concentrationIndex(m);
          const n = idx.shares.length;
          expect(idx.hhi as number).toBeGreaterThanOrEqual(1 / n - 1e-12);
          expect(idx.hhi as number).toBeLessThanOrEqual(1 + 1e-12);
          expect(idx.normalized_hhi as number).toBeGreaterThanOrEqual(-1e-12);
          expect(idx.normalized_hhi as number).toBeLessThanOrEqual(1 + 1e-12);
          expect(idx.shares.reduce((s, x) => s + x.share, 0)).toBeCloseTo(1, 12);
        },
      ),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('A', 'B', 'C'), fc.constantFrom('ann', 'bob', 'cat'), fc.integer({ min: 1, max: 28 })), {
          minLength: 1,
          maxLength: 8,
        }),
        (spec) => {
          const runs = spec.map(([sel, chair, day], i) => ({
            record: decided(`r${i}`, `2025-03-${String(day).padStart(2, '0')}T10:00:00Z`, { selected: `r${i}-${sel}`, chair }),
            domain: 'infra',
          }));
          expect(concentrationAudit([...runs].reverse(), { period: 'week' })).toEqual(concentrationAudit(runs, { period: 'week' }));
        },
      ),
      { numRuns: 50 },
    );
  });
});
