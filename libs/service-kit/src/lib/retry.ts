/** How `retryWithBackoff` waits and when it gives up. */
export interface BackoffOptions {
  /** Checked before each try: true ends the retries (a shutdown). */
  readonly stopped: () => boolean;
  /** Told of each failed try, with the wait before the next (a log line). */
  readonly onFailure?: (err: unknown, nextInMs: number) => void;
  /** The first wait, doubled after each failure up to `maxMs`. Defaults 250 ms and 5 s. */
  readonly firstMs?: number;
  readonly maxMs?: number;
  /** Wait `firstMs` before the first try too: what just ended is not made again at once. */
  readonly waitFirst?: boolean;
}

/**
 * Tries `attempt` until it succeeds, waiting longer after each failure (a feed made again after
 * NATS comes back, a consumer not made in time at start). Resolves with `{ value }`, or undefined
 * when `stopped()` ended the retries first.
 */
export async function retryWithBackoff<T>(attempt: () => Promise<T>, options: BackoffOptions): Promise<{ value: T } | undefined> {
  const first = options.firstMs ?? 250;
  const max = options.maxMs ?? 5_000;
  let delay = first;
  if (options.waitFirst) {
    await sleep(delay);
    delay = Math.min(max, delay * 2);
  }
  while (!options.stopped()) {
    try {
      return { value: await attempt() };
    } catch (err) {
      options.onFailure?.(err, delay);
      await sleep(delay);
      delay = Math.min(max, delay * 2);
    }
  }
  return undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
