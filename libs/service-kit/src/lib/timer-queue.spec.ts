import fc from 'fast-check';
import { TimerQueue, type TimerOutcome } from './timer-queue';

const clock = { now: () => new Date() };
const until = async (check: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

describe('TimerQueue', () => {
  it('given items due at various times, when started, then each action runs once its time has come, earliest first', async () => {
    const ran: string[] = [];
    const q = new TimerQueue({ clock, run: async (k) => (ran.push(k), 'done') });
    const t = Date.now();
    q.schedule('c', t + 60);
    q.schedule('a', t - 10);
    q.schedule('b', t + 20);
    q.start();
    await until(() => ran.length === 3);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(q.size).toBe(0);
    await q.stop();
  });

  it('given an action that fails, then the item stays and is retried with a backoff that doubles from backoffMs up to maxBackoffMs until it succeeds', async () => {
    jest.useFakeTimers();
    try {
      // Jest's fake timers move Date too, so each attempt's time is exact.
      const attemptsAt: number[] = [];
      const retries: number[] = [];
      const q = new TimerQueue({
        clock,
        backoffMs: 100,
        maxBackoffMs: 400,
        run: async () => {
          attemptsAt.push(Date.now());
          if (attemptsAt.length < 6) throw new Error('log unavailable');
          return 'done';
        },
        onRetry: (_k, n) => retries.push(n),
      });
      q.schedule('p', Date.now());
      q.start();
      await jest.advanceTimersByTimeAsync(2_000);

      expect(q.size).toBe(0);
      expect(retries).toEqual([1, 2, 3, 4, 5]);
      const gaps = attemptsAt.slice(1).map((t, i) => t - attemptsAt[i]);
      expect(gaps).toEqual([100, 200, 400, 400, 400]);
      await q.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('given an item cancelled before its time, then its action never runs; given one moved, only the latest time counts', async () => {
    const ran: string[] = [];
    const q = new TimerQueue({ clock, run: async (k) => (ran.push(k), 'done') });
    q.schedule('gone', Date.now() + 10);
    q.schedule('moved', Date.now() + 10);
    q.schedule('moved', Date.now() + 40);
    q.cancel('gone');
    q.start();
    await until(() => ran.length === 1);
    await new Promise((r) => setTimeout(r, 60));
    expect(ran).toEqual(['moved']);
    await q.stop();
  });

  it('given an item an hour away, when the wall clock jumps past it, then its action runs within maxSleepMs, not an hour later', async () => {
    jest.useFakeTimers();
    try {
      // The queue's clock is the wall clock, moved by hand; Node's timers are jest's fake ones.
      let wall = Date.parse('2025-01-15T10:00:00Z');
      const ran: { key: string; at: number }[] = [];
      const q = new TimerQueue({
        clock: { now: () => new Date(wall) },
        maxSleepMs: 1_000,
        run: async (key) => (ran.push({ key, at: wall }), 'done'),
      });
      const due = wall + 3_600_000;
      q.schedule('p', due);
      q.start();
      await jest.advanceTimersByTimeAsync(5_000);
      expect(ran).toEqual([]); // re-armed every second, but not yet due

      wall += 2 * 3_600_000; // the clock jumps forward past the item (an NTP step, a resumed VM)
      await jest.advanceTimersByTimeAsync(1_000);
      expect(ran).toEqual([{ key: 'p', at: wall }]);
      expect(q.size).toBe(0);
      await q.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('property: whatever fails and however items are rescheduled, every item not cancelled in the end runs to done', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            key: fc.integer({ min: 0, max: 9 }),
            delay: fc.integer({ min: 0, max: 15 }),
            failures: fc.integer({ min: 0, max: 2 }),
            cancel: fc.boolean(),
          }),
          {
            maxLength: 30,
          },
        ),
        async (plan) => {
          const failuresLeft = new Map<string, number>();
          const done = new Map<string, number>();
          const q = new TimerQueue({
            clock,
            backoffMs: 1,
            run: async (k): Promise<TimerOutcome> => {
              const left = failuresLeft.get(k) ?? 0;
              if (left > 0) {
                failuresLeft.set(k, left - 1);
                return 'retry';
              }
              done.set(k, (done.get(k) ?? 0) + 1);
              return 'done';
            },
          });
          q.start();
          const expected = new Set<string>();
          for (const step of plan) {
            const key = `k${step.key}`;
            failuresLeft.set(key, step.failures);
            q.schedule(key, Date.now() + step.delay);
            expected.add(key);
            if (step.cancel) {
              q.cancel(key);
              expected.delete(key);
            }
          }
          await until(() => q.size === 0, 2_000);
          await q.stop();
          expect(q.size).toBe(0);
          for (const k of expected) expect(done.get(k)).toBeGreaterThanOrEqual(1);
        },
      ),
      { numRuns: 30 },
    );
  });
});
