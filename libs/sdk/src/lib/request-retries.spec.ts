import { ConclaveError, ConclaveUnavailableError } from './conclave-error';
import { CouncilRequestError } from './council-member';
import { rateLimitHint, rateLimitWait, RequestRetries } from './request-retries';

const limited = (retryAfterMs: number) => new ConclaveError({ code: 'RATE_LIMITED', message: 'slow down', retry_after_ms: retryAfterMs });

/** A RequestRetries whose waits are recorded, not slept; `random` gives the jitter. */
function retriesWith(budgetMs: number, random = () => 0.5) {
  const waits: number[] = [];
  const retries = new RequestRetries(budgetMs, random, async (ms) => void waits.push(ms));
  return { retries, waits };
}

/** A send that fails with each of `failures` in turn, then answers `ok`. */
function sendFailing(...failures: Error[]) {
  let calls = 0;
  const send = jest.fn(async () => {
    const failure = failures[calls++];
    if (failure) throw failure;
    return 'ok';
  });
  return send;
}

describe('rateLimitWait', () => {
  it('given a hint that fits the budget, then the wait is between the hint and the hint times (1 + waiting), never past the budget', () => {
    for (const waiting of [1, 2, 20]) {
      expect(rateLimitWait(200, 10_000, waiting, () => 0)).toBe(200);
      expect(rateLimitWait(200, 10_000, waiting, () => 0.999999)).toBeCloseTo(200 * (1 + waiting), 0);
    }
    expect(rateLimitWait(200, 300, 20, () => 0.999999)).toBeCloseTo(300, 0);
    for (let i = 0; i < 1000; i++) {
      const wait = rateLimitWait(200, 1_000, 3, Math.random) as number;
      expect(wait).toBeGreaterThanOrEqual(200);
      expect(wait).toBeLessThanOrEqual(800);
    }
  });

  it('given a hint larger than what is left of the budget, then there is no wait: the refusal is final', () => {
    expect(rateLimitWait(200, 199, 1)).toBeUndefined();
    expect(rateLimitWait(1, 0, 1)).toBeUndefined();
    expect(rateLimitWait(200, 200, 1, () => 0.9)).toBe(200);
  });

  it('given a hint of 0, then the wait is 1 ms (it spends the budget); given no number, then no wait', () => {
    expect(rateLimitWait(0, 10, 1, () => 0)).toBe(1);
    expect(rateLimitWait(0, 0, 1)).toBeUndefined();
    expect(rateLimitWait(Number.NaN, 10_000, 1)).toBeUndefined();
    expect(rateLimitWait(-5, 10_000, 1)).toBeUndefined();
  });
});

describe('rateLimitHint', () => {
  it('reads the hint of a RATE_LIMITED ConclaveError or CouncilRequestError, and nothing else', () => {
    expect(rateLimitHint(limited(120))).toBe(120);
    expect(rateLimitHint(new CouncilRequestError({ code: 'RATE_LIMITED', message: 'm', retry_after_ms: 7 }))).toBe(7);
    expect(rateLimitHint(new ConclaveError({ code: 'RATE_LIMITED', message: 'no hint' }))).toBeUndefined();
    expect(rateLimitHint(new ConclaveError({ code: 'FORBIDDEN', message: 'm', retry_after_ms: 5 }))).toBeUndefined();
    expect(rateLimitHint(undefined)).toBeUndefined();
  });
});

describe('RequestRetries', () => {
  it('given RATE_LIMITED refusals, then each is sent again after its hinted wait, until an answer', async () => {
    const { retries, waits } = retriesWith(10_000, () => 0);
    const send = sendFailing(limited(200), limited(150));

    await expect(retries.run(send)).resolves.toBe('ok');

    expect(send).toHaveBeenCalledTimes(3);
    expect(waits).toEqual([200, 150]);
  });

  it('given a budget, when the next hint no longer fits in what is left, then that refusal is thrown without waiting', async () => {
    const { retries, waits } = retriesWith(500, () => 0);
    const refusal = limited(200);
    const send = sendFailing(limited(200), limited(200), refusal, limited(1));

    await expect(retries.run(send)).rejects.toBe(refusal);

    expect(waits).toEqual([200, 200]);
    expect(send).toHaveBeenCalledTimes(3);
  });

  it('given the jitter, then the waits of one call are summed against the budget as drawn', async () => {
    const { retries, waits } = retriesWith(700, () => 1);
    const send = sendFailing(limited(200), limited(200), limited(200));

    await expect(retries.run(send)).rejects.toMatchObject({ code: 'RATE_LIMITED' });

    expect(waits).toEqual([400, 300]);
  });

  it('given a budget of 0, then a RATE_LIMITED refusal is thrown at once', async () => {
    const { retries, waits } = retriesWith(0);
    const send = sendFailing(limited(1));

    await expect(retries.run(send)).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 1 });

    expect(send).toHaveBeenCalledTimes(1);
    expect(waits).toEqual([]);
  });

  it('given concurrent calls of one client waiting out refusals, then the jitter spreads over the hint times the waiting calls', async () => {
    const waits: number[] = [];
    const release: Array<() => void> = [];
    const retries = new RequestRetries(
      10_000,
      () => 0.999999,
      (ms) => new Promise<void>((resolve) => (waits.push(ms), release.push(resolve))),
    );
    const calls = [1, 2, 3].map(() => retries.run(sendFailing(limited(100))));
    await new Promise((r) => setImmediate(r));

    expect(waits.map(Math.round)).toEqual([200, 300, 400]);
    release.forEach((r) => r());
    await expect(Promise.all(calls)).resolves.toEqual(['ok', 'ok', 'ok']);
  });

  it('given other refusals, then they are final; an unanswered request is resent only when the caller says so', async () => {
    const { retries, waits } = retriesWith(10_000);
    const forbidden = new ConclaveError({ code: 'FORBIDDEN', message: 'no' });
    await expect(retries.run(sendFailing(forbidden))).rejects.toBe(forbidden);

    const unanswered = () => new ConclaveUnavailableError('acp.v1.propose', { cause: new Error('timeout') });
    const once = unanswered();
    await expect(retries.run(sendFailing(once))).rejects.toBe(once);

    let resends = 0;
    const send = sendFailing(unanswered(), limited(50), unanswered());
    await expect(retries.run(send, (err) => err instanceof ConclaveUnavailableError && resends++ < 2)).resolves.toBe('ok');
    expect(send).toHaveBeenCalledTimes(4);
    expect(waits).toHaveLength(1);
  });

  it('given an aborted signal, then a wait ends and the refusal is thrown', async () => {
    const control = new AbortController();
    const retries = new RequestRetries(120_000, () => 0);
    const send = sendFailing(limited(60_000 - 1), limited(1));
    const call = retries.run(send, undefined, control.signal);
    await new Promise((r) => setImmediate(r));

    control.abort();

    await expect(call).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 59_999 });
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('refuses a budget that is not a number >= 0', () => {
    expect(() => new RequestRetries(Number.NaN)).toThrow(TypeError);
    expect(() => new RequestRetries(-1)).toThrow(TypeError);
  });
});
