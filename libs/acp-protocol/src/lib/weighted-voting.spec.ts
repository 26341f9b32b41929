/** Spec section 6 (weight formula, aggregation, outcome) on exact decimals (DESIGN 2). */
import fc from 'fast-check';
import { compare, decimalFromNumber, decimalFromString, toDecimalString, toNumber, add } from './exact-decimal';
import { clampFactor, computeWeight, determineOutcome, reportedVotes, tallyVotes } from './weighted-voting';

const r = (response_type: 'endorse' | 'challenge', domain_authority: number, confidence = 1, trust_score = 1) => ({
  response_type,
  domain_authority,
  confidence,
  trust_score,
});

describe('6.1 weight computation', () => {
  it('6.1 Weight = clamp(domain_authority) x clamp(confidence) x clamp(trust_score), each clamped to [0, 1] first', () => {
    expect(computeWeight({ domain_authority: 0.95, confidence: 0.92, trust_score: 0.88 }).weight).toBe(0.76912);
    expect(computeWeight({ domain_authority: 0.8, confidence: 0.75, trust_score: 0.9 }).weight).toBe(0.54);
    expect(computeWeight({ domain_authority: 2, confidence: 0.5, trust_score: 1 }).weight).toBe(0.5);
    expect(computeWeight({ domain_authority: -1, confidence: 0.5, trust_score: 1 }).weight).toBe(0);
  });

  it('6.1 NaN clamps to 0 (least influence), +Infinity to 1, -Infinity and -0 to 0', () => {
    expect(clampFactor(NaN)).toBe(0);
    expect(clampFactor(Infinity)).toBe(1);
    expect(clampFactor(-Infinity)).toBe(0);
    expect(Object.is(clampFactor(-0), 0)).toBe(true);
  });

  it('6.1 the reported weight is the number form of the exact product (not the float product)', () => {
    expect(0.8 * 0.7 * 0.85).not.toBe(0.476);
    expect(computeWeight({ domain_authority: 0.8, confidence: 0.7, trust_score: 0.85 }).weight).toBe(0.476);
    expect(0.95 * 0.9 * 0.95).not.toBe(0.81225);
    expect(computeWeight({ domain_authority: 0.95, confidence: 0.9, trust_score: 0.95 }).weight).toBe(0.81225);
  });

  it('property 6.1: the weight is always in [0, 1] for any doubles, NaN and infinities included', () => {
    const anyDouble = fc.double();
    fc.assert(
      fc.property(anyDouble, anyDouble, anyDouble, (a, c, t) => {
        const w = computeWeight({ domain_authority: a, confidence: c, trust_score: t });
        expect(w.weight).toBeGreaterThanOrEqual(0);
        expect(w.weight).toBeLessThanOrEqual(1);
        expect(compare(w.exact, decimalFromNumber(0))).toBeGreaterThanOrEqual(0);
        expect(compare(w.exact, decimalFromNumber(1))).toBeLessThanOrEqual(0);
      }),
    );
  });
});

describe('6.2 / 6.3 aggregation and outcome on exact decimals', () => {
  it('DESIGN 2: 0.1 + 0.2 endorsing against 0.3 challenging is an exact tie -> ESCALATED, reported as 0.3 and 0.3', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    const tally = tallyVotes([r('endorse', 0.1), r('endorse', 0.2), r('challenge', 0.3)]);
    expect(determineOutcome(tally)).toBe('escalated');
    expect(reportedVotes(tally)).toEqual({ votes_for: 0.3, votes_against: 0.3 });
  });

  it('6.3 for > against approved, against > for rejected, equal (including 0 = 0) escalated', () => {
    expect(determineOutcome(tallyVotes([r('endorse', 0.5), r('challenge', 0.4)]))).toBe('approved');
    expect(determineOutcome(tallyVotes([r('endorse', 0.4), r('challenge', 0.5)]))).toBe('rejected');
    expect(determineOutcome(tallyVotes([]))).toBe('escalated');
    expect(determineOutcome(tallyVotes([r('endorse', 0), r('challenge', 0)]))).toBe('escalated');
  });

  it('6.3 distinguishes values a float sum would merge (1e-17 more is more)', () => {
    const tally = tallyVotes([r('endorse', 0.3), r('endorse', 1e-17), r('challenge', 0.3)]);
    expect(determineOutcome(tally)).toBe('approved');
    // ...although the reported totals, as JSON numbers, read the same.
    expect(reportedVotes(tally)).toEqual({ votes_for: 0.3, votes_against: 0.3 });
  });

  it('exact decimals: shortest round-trip decimals, exponent forms, canonical strings', () => {
    expect(toDecimalString(decimalFromNumber(5e-324))).toBe(`0.${'0'.repeat(323)}5`);
    expect(toDecimalString(decimalFromNumber(1.5e-7))).toBe('0.00000015');
    expect(toDecimalString(decimalFromNumber(1e21))).toBe('1' + '0'.repeat(21));
    expect(toDecimalString(decimalFromString('0.6885000'))).toBe('0.6885');
    expect(toDecimalString(decimalFromNumber(-0.25))).toBe('-0.25');
    expect(toNumber(add(decimalFromNumber(0.1), decimalFromNumber(0.2)))).toBe(0.3);
    expect(() => decimalFromNumber(NaN)).toThrow(RangeError);
  });

  it('property 6.2: the tally does not depend on response order', () => {
    const resp = fc.record({
      response_type: fc.constantFrom('endorse' as const, 'challenge' as const),
      domain_authority: fc.double({ min: 0, max: 1, noNaN: true }),
      confidence: fc.double({ min: 0, max: 1, noNaN: true }),
      trust_score: fc.double({ min: 0, max: 1, noNaN: true }),
    });
    fc.assert(
      fc.property(fc.array(resp, { maxLength: 30 }), fc.func(fc.integer()), (responses, key) => {
        const shuffled = [...responses].sort((a, b) => key(a) - key(b));
        const t1 = tallyVotes(responses);
        const t2 = tallyVotes(shuffled);
        expect(compare(t1.votesFor, t2.votesFor)).toBe(0);
        expect(compare(t1.votesAgainst, t2.votesAgainst)).toBe(0);
        expect(determineOutcome(t1)).toBe(determineOutcome(t2));
      }),
    );
  });

  it('property 6.3: an exact tie always escalates (mirror endorsements and challenges)', () => {
    const f = fc.double({ min: 0, max: 1, noNaN: true });
    fc.assert(
      fc.property(fc.array(fc.tuple(f, f, f), { minLength: 1, maxLength: 20 }), (factors) => {
        const endorse = factors.map(([a, c, t]) => r('endorse', a, c, t));
        const challenge = [...factors].reverse().map(([a, c, t]) => r('challenge', t, a, c));
        expect(determineOutcome(tallyVotes([...endorse, ...challenge]))).toBe('escalated');
      }),
    );
  });
});
