import fc from 'fast-check';
import { RateLimiter } from './rate-limiter';

describe('RateLimiter (a token bucket per key)', () => {
  it('given a burst of 3 at 1 per second, then 3 pass at once, the 4th is refused with the wait until the next, and one passes after it', () => {
    const limiter = new RateLimiter({ perSecond: 1, burst: 3 });
    expect([0, 0, 0].map((t) => limiter.take('mallory', t).allowed)).toEqual([true, true, true]);
    expect(limiter.take('mallory', 0)).toEqual({ allowed: false, retryAfterMs: 1000, firstRefusal: true });
    expect(limiter.take('mallory', 400)).toEqual({ allowed: false, retryAfterMs: 600, firstRefusal: false });
    expect(limiter.take('mallory', 1000)).toEqual({ allowed: true });
    expect(limiter.take('mallory', 1000)).toMatchObject({ allowed: false, firstRefusal: true });
  });

  it('given one key spent, then another key is untouched', () => {
    const limiter = new RateLimiter({ perSecond: 1, burst: 2 });
    for (let i = 0; i < 50; i++) limiter.take('mallory', 0);
    expect(limiter.take('alice', 0)).toEqual({ allowed: true });
    expect(limiter.take('alice', 0)).toEqual({ allowed: true });
  });

  it('given more keys than it keeps, then it forgets idle ones and a forgotten key starts full (forgetting only forgives)', () => {
    const limiter = new RateLimiter({ perSecond: 1, burst: 1, maxKeys: 4 });
    for (let i = 0; i < 20; i++) expect(limiter.take(`k${i}`, i).allowed).toBe(true);
  });

  it('property: over any schedule, each key is allowed at most burst + perSecond x elapsed, and a key flooding never changes what another is allowed', () => {
    const schedule = fc.array(fc.tuple(fc.constantFrom('alice', 'mallory'), fc.integer({ min: 0, max: 200 })), { maxLength: 300 });
    fc.assert(
      fc.property(schedule, fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 10 }), (steps, perSecond, burst) => {
        const shared = new RateLimiter({ perSecond, burst });
        const aliceAlone = new RateLimiter({ perSecond, burst });
        let t = 0;
        const allowed = { alice: 0, mallory: 0 };
        for (const [key, gap] of steps) {
          t += gap;
          const d = shared.take(key, t);
          if (d.allowed) allowed[key]++;
          else expect(d.retryAfterMs).toBeGreaterThan(0);
          if (key === 'alice') expect(aliceAlone.take('alice', t).allowed).toBe(d.allowed);
        }
        for (const key of ['alice', 'mallory'] as const) expect(allowed[key]).toBeLessThanOrEqual(burst + (perSecond * t) / 1000);
      }),
    );
  });
});
