import { AcpError } from '@conclave/acp-protocol';

/** What a take answered: allowed, or refused with how long until the next one would be allowed. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number; firstRefusal: boolean };

export interface RateLimits {
  /** Sustained rate per key. */
  perSecond: number;
  /** How many may come at once after a quiet spell. */
  burst: number;
  /** Keys kept at most; past it the fullest (idlest) buckets are dropped, which only forgives. */
  maxKeys?: number;
}

interface Bucket {
  tokens: number;
  at: number;
  refusing: boolean;
}

/**
 * A token bucket per key (a participant, a source address): one key running dry never slows
 * another. Pure: the caller passes the time, so it is decided the same way in tests and in a
 * service; in a service it lives in memory, per replica.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly maxKeys: number;

  constructor(private readonly limits: RateLimits) {
    if (!(limits.perSecond > 0) || !(limits.burst >= 1)) throw new Error('rate limits need perSecond > 0 and burst >= 1');
    this.maxKeys = limits.maxKeys ?? 10_000;
  }

  take(key: string, nowMs: number): RateDecision {
    const bucket = this.refill(key, nowMs);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      bucket.refusing = false;
      return { allowed: true };
    }
    const firstRefusal = !bucket.refusing;
    bucket.refusing = true;
    return { allowed: false, retryAfterMs: Math.ceil(((1 - bucket.tokens) * 1000) / this.limits.perSecond), firstRefusal };
  }

  private refill(key: string, nowMs: number): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.forgetIdlest(nowMs);
      bucket = { tokens: this.limits.burst, at: nowMs, refusing: false };
      this.buckets.set(key, bucket);
      return bucket;
    }
    const elapsed = Math.max(0, nowMs - bucket.at);
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + (elapsed * this.limits.perSecond) / 1000);
    bucket.at = nowMs;
    return bucket;
  }

  /** Drops the buckets that are full by now (forgetting them changes nothing), else the oldest half. */
  private forgetIdlest(nowMs: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.at) * this.limits.perSecond) / 1000 >= this.limits.burst) this.buckets.delete(key);
    }
    if (this.buckets.size < this.maxKeys) return;
    const oldest = [...this.buckets.entries()].sort((a, b) => a[1].at - b[1].at).slice(0, Math.ceil(this.buckets.size / 2));
    for (const [key] of oldest) this.buckets.delete(key);
  }
}

/**
 * RATE_LIMITED with its retry hint. `repeat` marks a refusal after the first of a run of
 * refusals to the same key: those are not each written to the audit log (a flood would
 * otherwise grow it by one entry per message).
 */
export class RateLimitedError extends AcpError {
  constructor(
    message: string,
    retryAfterMs: number,
    readonly repeat: boolean,
    /** The participant whose signature verified before its allowance ran out (none for a source's failed tokens). */
    readonly verifiedParticipant?: string,
  ) {
    super('RATE_LIMITED', message, undefined, retryAfterMs);
  }
}
