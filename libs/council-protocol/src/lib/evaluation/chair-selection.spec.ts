import fc from 'fast-check';
import { CouncilError } from '../errors';
import {
  CapabilityObservation,
  CapabilityProjection,
  CapabilityRole,
  emptyCapabilityProjection,
  evolveCapabilities,
  memberScope,
} from './capability';
import { ChairSelectionInput, ChairSelectionPolicy, parseChairSelectionPolicy, selectChair } from './chair-selection';
import { memberFixture } from './evaluation-fixtures';

const ann = memberFixture('ann', 'model-a');
const bob = memberFixture('bob', 'model-b');
const cat = memberFixture('cat', 'model-c');
const dan = { ...memberFixture('dan', 'model-d'), council_roles: ['proposer' as const, 'reviewer' as const] };

/** `successes` of `total` outcome observations for a member in a role and domain. */
function history(entries: [typeof ann, CapabilityRole, number, number][], domain = 'infra'): CapabilityProjection {
  const obs: CapabilityObservation[] = entries.flatMap(([m, role, successes, total]) =>
    Array.from({ length: total }, (_, i) => ({
      observation_id: `${m.member_id}:${role}:${i}`,
      run_id: `run-${i}`,
      at: '2025-01-01T00:00:00Z',
      member_id: m.member_id,
      scope: memberScope(m, role, domain),
      kind: 'outcome' as const,
      success: i < successes ? 1 : 0,
      basis: 'test',
    })),
  );
  return obs.reduce(evolveCapabilities, emptyCapabilityProjection());
}

const input = (over: Partial<ChairSelectionInput> = {}): ChairSelectionInput => ({
  panel: [ann, bob, cat, dan],
  domain: 'infra',
  seed: 'seed-1',
  capabilities: emptyCapabilityProjection(),
  previous_chairs: [],
  ...over,
});

describe('spec 14 chair selection policies (council:L4)', () => {
  it('given ann proposes best but bob synthesizes best, when chosen by scoped capability, then bob chairs: the top proposer is not automatically the chair', () => {
    const capabilities = history([
      [ann, 'proposer', 19, 20],
      [ann, 'synthesizer', 5, 10],
      [bob, 'proposer', 5, 20],
      [bob, 'synthesizer', 9, 10],
    ]);
    const s = selectChair({ policy: 'scoped-capability' }, input({ capabilities }));
    expect(s.chair).toBe('bob');
    expect(s.chair_order.slice(0, 2)).toEqual(['bob', 'ann']);
  });

  it('given a lucky 1-of-1 and a steady 16-of-20, when chosen by scoped capability, then the steady one chairs (the lower bound, 16.4)', () => {
    const capabilities = history([
      [ann, 'synthesizer', 1, 1],
      [bob, 'synthesizer', 16, 20],
    ]);
    const s = selectChair({ policy: 'scoped-capability' }, input({ capabilities }));
    expect(s.scores.find((x) => x.member_id === 'ann')?.estimate).toBeGreaterThan(0.6);
    expect(s.chair).toBe('bob');
  });

  it('given estimates from another domain only, when chosen for this domain, then they do not count (16.5)', () => {
    const capabilities = history([[ann, 'synthesizer', 20, 20]], 'legal');
    const s = selectChair({ policy: 'scoped-capability' }, input({ capabilities }));
    expect(s.scores.every((x) => x.observations === 0)).toBe(true);
  });

  it('given a member without the chair role and an excluded member, when chosen, then neither is in the chair order', () => {
    const s = selectChair({ policy: 'rotation' }, input({ exclude: ['cat'] }));
    expect([...s.chair_order].sort()).toEqual(['ann', 'bob']);
  });

  it('given rotation over six runs, when each run records its chair, then every eligible member chairs once before anyone chairs twice', () => {
    const chairs: string[] = [];
    for (let i = 0; i < 6; i++)
      chairs.push(selectChair({ policy: 'rotation' }, input({ seed: `run-${i}`, previous_chairs: chairs })).chair as string);
    expect([...chairs.slice(0, 3)].sort()).toEqual(['ann', 'bob', 'cat']);
    expect(chairs.slice(3)).toEqual(chairs.slice(0, 3));
  });

  it('given exploration at rate 0.2 over 1000 seeds, when chosen, then about a fifth of runs go to a low-observation member, and only to one', () => {
    const capabilities = history([
      [ann, 'synthesizer', 18, 20],
      [bob, 'synthesizer', 15, 20],
    ]);
    const policy: ChairSelectionPolicy = { policy: 'exploration', rate: 0.2, min_observations: 5, base: 'scoped-capability' };
    let explored = 0;
    for (let i = 0; i < 1000; i++) {
      const s = selectChair(policy, input({ capabilities, seed: `s${i}` }));
      if (s.exploration) {
        explored++;
        expect(s.chair).toBe('cat');
      } else expect(s.chair).toBe('ann');
    }
    expect(explored).toBeGreaterThan(150);
    expect(explored).toBeLessThan(250);
  });

  it('given every member well observed, when exploration is drawn, then no slot is used and the reason says so', () => {
    const capabilities = history([
      [ann, 'synthesizer', 18, 20],
      [bob, 'synthesizer', 15, 20],
      [cat, 'synthesizer', 10, 20],
    ]);
    const s = selectChair({ policy: 'exploration', rate: 1, min_observations: 5, base: 'scoped-capability' }, input({ capabilities }));
    expect([s.exploration, s.chair, s.reason]).toEqual([false, 'ann', expect.stringContaining('no low-observation member')]);
  });

  it('given an exploration rate above 1, when chosen, then SCHEMA_VIOLATION at chair_selection.rate', () => {
    let err: unknown;
    try {
      selectChair({ policy: 'exploration', rate: 2, min_observations: 1, base: 'rotation' }, input());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CouncilError);
    expect([(err as CouncilError).code, (err as CouncilError).field]).toEqual(['SCHEMA_VIOLATION', 'chair_selection.rate']);
  });

  it('given policy values, when parsed, then names and objects are accepted, base defaults to scoped capability, and a bad rate is named', () => {
    expect(parseChairSelectionPolicy('rotation')).toEqual({ policy: 'rotation' });
    expect(parseChairSelectionPolicy({ policy: 'exploration', rate: 0.1, min_observations: 3 })).toEqual({
      policy: 'exploration',
      rate: 0.1,
      min_observations: 3,
      base: 'scoped-capability',
    });
    let err: unknown;
    try {
      parseChairSelectionPolicy({ policy: 'exploration', rate: -1, min_observations: 3 });
    } catch (e) {
      err = e;
    }
    expect((err as CouncilError).field).toBe('chair_selection.rate');
  });

  it('property: the same input and seed give the same selection; the order is a permutation of the eligible members', () => {
    const policies = fc.constantFrom<ChairSelectionPolicy>(
      { policy: 'scoped-capability' },
      { policy: 'rotation' },
      { policy: 'exploration', rate: 0.5, min_observations: 3, base: 'rotation' },
      { policy: 'exploration', rate: 0.5, min_observations: 3, base: 'scoped-capability' },
    );
    const member = fc.constantFrom(ann, bob, cat);
    fc.assert(
      fc.property(
        policies,
        fc.string({ maxLength: 6 }),
        fc.array(fc.tuple(member, fc.integer({ min: 0, max: 4 }), fc.integer({ min: 4, max: 8 })), { maxLength: 3 }),
        fc.array(fc.constantFrom('ann', 'bob', 'cat'), { maxLength: 6 }),
        (policy, seed, hist, previous) => {
          const capabilities = history(hist.map(([m, s, t]) => [m, 'synthesizer', s, t] as [typeof ann, CapabilityRole, number, number]));
          const a = selectChair(policy, input({ seed, capabilities, previous_chairs: previous }));
          expect(selectChair(policy, input({ seed, capabilities, previous_chairs: previous }))).toEqual(a);
          expect([...a.chair_order].sort()).toEqual(['ann', 'bob', 'cat']);
          expect(a.chair).toBe(a.chair_order[0]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
