import { retryWithBackoff } from './retry';

describe('retryWithBackoff', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** An attempt that fails `failures` times, recording when each try came. */
  function flaky(failures: number) {
    const tries: number[] = [];
    const attempt = async () => {
      tries.push(Date.now());
      if (tries.length <= failures) throw new Error(`down (${tries.length})`);
      return 'made';
    };
    return { tries, attempt };
  }

  it('given an attempt that fails twice, then it is tried again after 250 and 500 ms and its value returned; each failure is told with the next wait', async () => {
    const { tries, attempt } = flaky(2);
    const failures: [string, number][] = [];
    const result = retryWithBackoff(attempt, {
      stopped: () => false,
      onFailure: (err, next) => failures.push([(err as Error).message, next]),
    });

    await jest.advanceTimersByTimeAsync(1_000);

    await expect(result).resolves.toEqual({ value: 'made' });
    expect(tries.map((t) => t - tries[0])).toEqual([0, 250, 750]);
    expect(failures).toEqual([
      ['down (1)', 250],
      ['down (2)', 500],
    ]);
  });

  it('given waitFirst, then the first try comes after the first wait, and the waits double up to maxMs', async () => {
    const start = Date.now();
    const { tries, attempt } = flaky(4);
    const result = retryWithBackoff(attempt, { stopped: () => false, waitFirst: true, firstMs: 100, maxMs: 500 });

    await jest.advanceTimersByTimeAsync(3_000);

    await expect(result).resolves.toEqual({ value: 'made' });
    expect(tries.map((t) => t - start)).toEqual([100, 300, 700, 1_200, 1_700]);
  });

  it('given a stop while it waits, then it tries no more and resolves undefined', async () => {
    let stopping = false;
    const { tries, attempt } = flaky(100);
    const result = retryWithBackoff(attempt, { stopped: () => stopping });
    await jest.advanceTimersByTimeAsync(300);
    stopping = true;
    await jest.advanceTimersByTimeAsync(10_000);

    await expect(result).resolves.toBeUndefined();
    expect(tries).toHaveLength(2);
  });
});
