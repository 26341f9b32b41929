import { Logger } from '@nestjs/common';
import { KV, KvEntry, NatsConnection, StorageType } from 'nats';
import { openRacingCreate } from '@conclave/event-log';

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** What a lease entry holds: who holds it, since when, and until when unless renewed. */
export interface LeaseRecord {
  holder: string;
  acquired_at: string;
  expires_at: string;
}

export interface LeaseOptions {
  /** The KV bucket of leases (`<event stream>_LEASES`); its entries age out after `ttlMs` without a write. */
  bucket: string;
  /** What is leased, e.g. `audit-chain`. */
  key: string;
  /** This process as holder: unique per process. */
  holder: string;
  /** How long a lease lasts without renewal. It is renewed every third of it. */
  ttlMs: number;
  /** Replicas of the bucket's stream (3 on a cluster). */
  replicas: number;
  /** Milliseconds since the epoch; the system clock unless a test gives another. */
  now?: () => number;
}

/** What the holder is told: the fencing token is the KV revision its lease was written at. */
export interface LeaseEvents {
  /** This process holds the lease from now on; the work that needs one writer may start. */
  acquired(token: number): Promise<void> | void;
  /** It no longer does (taken over, not renewed in time, or stopping): that work must stop at once. */
  lost(reason: string): Promise<void> | void;
}

const WRONG_LAST_SEQUENCE = 10071;

function isRevisionConflict(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(e?.message ?? '');
}

/**
 * A lease with fencing on JetStream KV, for work that must have one writer at a time while any
 * number of replicas run. The entry `key` in the bucket names the holder; every write of it is
 * revision-checked (create when absent, update at the revision read), so of two replicas racing
 * for it exactly one wins, and a holder learns it lost the lease at its next renewal, when the
 * revision it holds is no longer the entry's.
 *
 * Expiry is enforced twice: the bucket's `max_age` (its TTL) removes an entry nobody renewed for
 * `ttlMs`, so a dead holder's lease disappears on the server's clock; and the entry's
 * `expires_at` lets a standby take over an expired entry still present. A holder that cannot
 * renew (NATS unreachable, or a write that waits for a reply that does not come) gives the lease
 * up itself a margin before `ttlMs` has passed since its last renewal was sent, by a deadline of
 * its own rather than at its next renewal: before a standby can have taken it over by either
 * rule.
 *
 * The revision is the fencing token. A lease alone cannot stop a paused holder's late write, so
 * the protected data must also be written with a check of its own (the audit chain: each entry
 * expects the chain's last sequence) and a writer that fails that check re-reads and defers to
 * the lease.
 */
export class KvLease {
  private readonly logger: Logger;
  private kv: Promise<KV> | undefined;
  private revision: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the lease must be given up unless renewed first. */
  private deadline: NodeJS.Timeout | undefined;
  private running = false;
  private tick: Promise<void> = Promise.resolve();
  private readonly now: () => number;
  private lastFailure: string | undefined;
  /** Why the last renewal failed, if it did (for the reason the lease is given up). */
  private renewFailure: string | undefined;
  /**
   * The holder's work stopping after the last loss. The lease is not taken again before it has
   * stopped: a loss by the deadline comes between two steps, and a step taking the lease back
   * at once would start the work while its last run still winds down, two at a time.
   */
  private losing: Promise<void> = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    readonly options: LeaseOptions,
    private readonly events: LeaseEvents,
  ) {
    this.logger = new Logger(`Lease:${options.key}`);
    this.now = options.now ?? Date.now;
  }

  /** The fencing token while this process holds the lease. */
  get token(): number | undefined {
    return this.revision;
  }

  get held(): boolean {
    return this.revision !== undefined;
  }

  /** Tries to take the lease now and then keeps trying (standby) or renewing (holder) every third of the TTL. */
  async start(): Promise<void> {
    this.running = true;
    await this.step();
    this.schedule();
  }

  /** Stops, tells the holder's work to stop, then releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearTimeout(this.deadline);
    await this.tick;
    const revision = this.revision;
    if (revision === undefined) return this.losing;
    await this.lose('stopping');
    const kv = await this.bucket().catch(() => undefined);
    await kv?.delete(this.options.key, { previousSeq: revision }).catch((err: unknown) => {
      if (!isRevisionConflict(err)) this.logger.warn(`lease not released (it expires by itself): ${(err as Error).message}`);
    });
  }

  /** Who holds the lease now, as the bucket says. */
  async holder(): Promise<LeaseRecord | null> {
    return live(await (await this.bucket()).get(this.options.key));
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = setTimeout(
      () => {
        this.tick = this.step().finally(() => this.schedule());
      },
      Math.max(50, Math.floor(this.options.ttlMs / 3)),
    );
  }

  private async step(): Promise<void> {
    try {
      if (this.revision === undefined) {
        await this.losing;
        const taken = await this.tryAcquire();
        if (taken && !this.running) {
          // Stopped while taking it: give it back, or a standby waits a lease time for nothing.
          await (await this.bucket()).delete(this.options.key, { previousSeq: taken.token }).catch(() => undefined);
          return;
        }
        if (taken) {
          const { token } = taken;
          this.revision = token;
          this.holdUntilExpiry(taken.writtenAt);
          this.logger.log(`acquired by ${this.options.holder} (token ${token})`);
          // Not awaited: renewals must go on while the holder starts its work (a catch-up can be long).
          void Promise.resolve()
            .then(() => this.events.acquired(token))
            .catch((err: Error) => this.logger.error(`lease holder failed to start: ${err.message}`));
        }
      } else await this.renew();
    } catch (err) {
      // Once per distinct failure: a replica cut off from NATS would otherwise log every step.
      const message = (err as Error).message;
      if (message !== this.lastFailure) this.logger.warn(`lease step failed: ${message}`);
      this.lastFailure = message;
      return;
    }
    this.lastFailure = undefined;
  }

  /**
   * The new revision when the lease was free, expired or released, with when it was written (this
   * clock, before the write); undefined when another holds it.
   */
  private async tryAcquire(): Promise<{ token: number; writtenAt: number } | undefined> {
    const kv = await this.bucket();
    const entry = await kv.get(this.options.key);
    const current = live(entry);
    const writtenAt = this.now();
    try {
      if (!current || !entry) return { token: await kv.create(this.options.key, this.value(writtenAt)), writtenAt };
      if (current.holder !== this.options.holder && Date.parse(current.expires_at) > writtenAt) return undefined;
      return { token: await kv.update(this.options.key, this.value(writtenAt), entry.revision), writtenAt };
    } catch (err) {
      if (isRevisionConflict(err)) return undefined;
      throw err;
    }
  }

  private async renew(): Promise<void> {
    const revision = this.revision;
    if (revision === undefined) return;
    const startedAt = this.now();
    try {
      const kv = await this.bucket();
      const next = await kv.update(this.options.key, this.value(startedAt, this.acquiredAt), revision);
      if (this.revision !== revision) {
        // Given up by its deadline while this write waited: release it, a standby need not wait.
        await kv.delete(this.options.key, { previousSeq: next }).catch(() => undefined);
        return;
      }
      this.revision = next;
      this.renewFailure = undefined;
      this.holdUntilExpiry(startedAt);
    } catch (err) {
      if (this.revision !== revision) return;
      if (isRevisionConflict(err)) return this.lose('revision moved: expired unrenewed or taken over by another holder');
      // Unreachable: the deadline gives the lease up in time if no later renewal lands.
      this.renewFailure = (err as Error).message;
      this.logger.warn(`lease not renewed yet: ${(err as Error).message}`);
    }
  }

  /**
   * The lease written at `writtenAt` (this clock, before the write) expires for the others at
   * writtenAt + ttl: give it up a margin before that, unless a renewal lands first.
   */
  private holdUntilExpiry(writtenAt: number): void {
    clearTimeout(this.deadline);
    const ttl = this.options.ttlMs;
    const at = writtenAt + ttl - leaseMargin(ttl);
    this.deadline = setTimeout(
      () => {
        const why = this.renewFailure ?? 'no reply';
        void this.lose(`not renewed for ${ttl} ms: ${why}`).catch((err: Error) =>
          this.logger.error(`lease holder failed to stop: ${err.message}`),
        );
      },
      Math.max(0, at - this.now()),
    );
  }

  private acquiredAt: string | undefined;

  private lose(reason: string): Promise<void> {
    if (this.revision === undefined) return this.losing;
    clearTimeout(this.deadline);
    this.revision = undefined;
    this.acquiredAt = undefined;
    this.logger.warn(`lost by ${this.options.holder}: ${reason}`);
    // Told at once, in this same turn: the work must stop before anything else runs.
    let stopped: Promise<void>;
    try {
      stopped = Promise.resolve(this.events.lost(reason));
    } catch (err) {
      stopped = Promise.reject(err as Error);
    }
    // A holder that failed to stop is reported by the caller; the lease may still be taken again.
    this.losing = stopped.catch(() => undefined);
    return stopped;
  }

  private value(at: number, acquiredAt?: string): Uint8Array {
    this.acquiredAt = acquiredAt ?? new Date(at).toISOString();
    const record: LeaseRecord = {
      holder: this.options.holder,
      acquired_at: this.acquiredAt,
      expires_at: new Date(at + this.options.ttlMs).toISOString(),
    };
    return encoder.encode(JSON.stringify(record));
  }

  private bucket(): Promise<KV> {
    this.kv ??= openRacingCreate(() =>
      this.nc.jetstream().views.kv(this.options.bucket, {
        history: 1,
        replicas: this.options.replicas,
        storage: StorageType.File,
        ttl: this.options.ttlMs,
      }),
    );
    this.kv.catch(() => (this.kv = undefined));
    return this.kv;
  }
}

function live(entry: KvEntry | null): LeaseRecord | null {
  if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
  try {
    const v = JSON.parse(decoder.decode(entry.value)) as LeaseRecord;
    return typeof v.holder === 'string' && typeof v.expires_at === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * How long before its expiry a holder gives its lease up: expiry is judged by the clock of
 * whoever takes the lease over, and clocks agree only to within a small fraction of the lease time.
 */
export const leaseMargin = (leaseMs: number): number => Math.floor(leaseMs / 10);

/** The bucket of a deployment's single-writer leases. */
export const leaseBucketOf = (eventStream: string): string => `${eventStream}_LEASES`;
