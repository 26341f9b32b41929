/**
 * How long a call may spend waiting out RATE_LIMITED refusals, in all, by default. 10 s: under
 * the services' default allowance (bursts of 500, then 100 per second) a burst of some 1,000
 * requests at once all goes through, and a caller with its own deadline (an MCP tool call, a
 * request handler) still hears a refusal rather than a hang.
 */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 10_000;

/**
 * The wait before resending a request refused RATE_LIMITED with the hint `hintMs`, or undefined
 * when the hint does not fit in `leftMs`, what is left of the call's budget (the refusal is then
 * final, at once). Drawn uniformly from [hint, hint × (1 + waiting)], capped at `leftMs`, where
 * `waiting` counts the client's requests waiting out a refusal, this one included: the bucket
 * frees about one request per hint, so `waiting` requests spread over that span come back
 * about as fast as it lets them through, instead of all at once to be refused again.
 */
export function rateLimitWait(hintMs: number, leftMs: number, waiting: number, random: () => number = Math.random): number | undefined {
  if (!(hintMs >= 0)) return undefined;
  // At least 1 ms (the services hint no less): a hint of 0 would resend in a loop, spending nothing.
  const hint = Math.max(1, hintMs);
  if (hint > leftMs) return undefined;
  const latest = Math.min(leftMs, hint * (1 + Math.max(1, waiting)));
  return hint + random() * (latest - hint);
}

/** The retry hint of a RATE_LIMITED refusal (a ConclaveError or CouncilRequestError), else undefined. */
export function rateLimitHint(err: unknown): number | undefined {
  const { code, retryAfterMs } = (err ?? {}) as { code?: unknown; retryAfterMs?: unknown };
  return code === 'RATE_LIMITED' && typeof retryAfterMs === 'number' ? retryAfterMs : undefined;
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The one retry loop of an SDK client's requests. A RATE_LIMITED refusal is resent after its
 * hinted wait, with jitter, while the call's wait budget lasts: the services refuse it after the
 * signature verified and before the nonce is spent or anything is recorded, so sending it again
 * is safe for every request. `send` builds and signs each attempt afresh (a new nonce and
 * timestamp). A caller adds its own resends of an unanswered request with `resend`; an aborted
 * `signal` (a CouncilMember's task abandoned) ends a wait and throws the refusal.
 */
export class RequestRetries {
  /** This client's requests waiting out a refusal now (they share one participant's allowance). */
  private waiting = 0;

  constructor(
    /** The budget per call; 0 makes every RATE_LIMITED final at once. */
    private readonly budgetMs: number = DEFAULT_RATE_LIMIT_WAIT_MS,
    private readonly random: () => number = Math.random,
    private readonly wait: (ms: number, signal?: AbortSignal) => Promise<void> = sleep,
  ) {
    if (!(budgetMs >= 0)) throw new TypeError(`rateLimitWaitMs must be a number >= 0, not ${budgetMs}`);
  }

  async run<T>(send: () => Promise<T>, resend: (err: unknown) => boolean = () => false, signal?: AbortSignal): Promise<T> {
    let waited = 0;
    for (;;) {
      try {
        return await send();
      } catch (err) {
        if (resend(err)) continue;
        const hint = rateLimitHint(err);
        const ms = hint === undefined ? undefined : rateLimitWait(hint, this.budgetMs - waited, this.waiting + 1, this.random);
        if (ms === undefined || signal?.aborted) throw err;
        waited += ms;
        this.waiting++;
        try {
          await this.wait(ms, signal);
        } finally {
          this.waiting--;
        }
        if (signal?.aborted) throw err;
      }
    }
  }
}
