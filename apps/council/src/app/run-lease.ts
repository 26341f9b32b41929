import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, Clock, IDS, IdGenerator, NATS_CONNECTION, SERVICE_CONFIG } from '@conclave/service-kit';
import { KV, KvEntry, NatsConnection, StorageType } from 'nats';
import { CouncilConfig } from './council.config';
import { openRacingCreate } from '@conclave/event-log';

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** What a lease entry holds: who drives the run, until when unless renewed. */
export interface LeaseValue {
  holder: string;
  expires_at: string;
}

/** A lease this process holds on one run: the KV revision is the proof, checked on every renewal. */
export interface HeldLease {
  runId: string;
  revision: number;
  /** Taken from another holder whose lease had expired: what it appended since must be re-read. */
  tookOver: boolean;
}

/**
 * One council replica drives a run at a time: a JetStream KV entry per run
 * (`<event stream>_COUNCIL_LEASES`, key = run id) names the holder and an expiry. Taking it is a
 * create (no entry) or a revision-checked update (the entry expired, or was released); renewing is
 * a revision-checked update, so a replica that lost the lease learns it at its next renewal and
 * stops driving. Expiry is in the value, judged by the taker's clock, so clocks must agree to
 * within a small fraction of the lease time.
 */
@Injectable()
export class RunLeases {
  /** This process, as lease holder. */
  readonly holder: string;
  private kv: Promise<KV> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) ids: IdGenerator,
  ) {
    this.holder = `council-${ids.next()}`;
  }

  get bucketName(): string {
    return `${this.config.eventStream}_COUNCIL_LEASES`;
  }

  get leaseMs(): number {
    return this.config.leaseMs;
  }

  /** Takes the run's lease when free, expired or already ours; null when another replica holds it. */
  async acquire(runId: string): Promise<HeldLease | null> {
    const kv = await this.bucket();
    const entry = await kv.get(runId);
    const current = live(entry);
    try {
      if (!current || !entry) return { runId, revision: await kv.create(runId, this.value()), tookOver: false };
      const other = current.holder !== this.holder;
      if (other && Date.parse(current.expires_at) > this.clock.now().getTime()) return null;
      return { runId, revision: await kv.update(runId, this.value(), entry.revision), tookOver: other };
    } catch (err) {
      if (isRevisionConflict(err)) return null;
      throw err;
    }
  }

  /** Extends a held lease; false when it was taken over (the revision moved): stop driving. */
  async renew(lease: HeldLease): Promise<boolean> {
    const kv = await this.bucket();
    try {
      lease.revision = await kv.update(lease.runId, this.value(), lease.revision);
      return true;
    } catch (err) {
      if (isRevisionConflict(err)) return false;
      throw err;
    }
  }

  /** Gives the run up at once (run ended, or shutdown), unless someone else took it meanwhile. */
  async release(lease: HeldLease): Promise<void> {
    const kv = await this.bucket();
    await kv.delete(lease.runId, { previousSeq: lease.revision }).catch((err: unknown) => {
      if (!isRevisionConflict(err)) throw err;
    });
  }

  /** Who holds a run's lease now (for tests and operators). */
  async holderOf(runId: string): Promise<LeaseValue | null> {
    return live(await (await this.bucket()).get(runId));
  }

  private value(): Uint8Array {
    const v: LeaseValue = { holder: this.holder, expires_at: new Date(this.clock.now().getTime() + this.leaseMs).toISOString() };
    return encoder.encode(JSON.stringify(v));
  }

  private bucket(): Promise<KV> {
    this.kv ??= openRacingCreate(() =>
      this.nc.jetstream().views.kv(this.bucketName, { history: 1, replicas: this.config.logReplicas, storage: StorageType.File }),
    );
    this.kv.catch(() => (this.kv = undefined));
    return this.kv;
  }
}

function live(entry: KvEntry | null): LeaseValue | null {
  if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return null;
  try {
    const v = JSON.parse(decoder.decode(entry.value)) as LeaseValue;
    return typeof v.holder === 'string' && typeof v.expires_at === 'string' ? v : null;
  } catch {
    return null;
  }
}

const WRONG_LAST_SEQUENCE = 10071;

function isRevisionConflict(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(e?.message ?? '');
}
