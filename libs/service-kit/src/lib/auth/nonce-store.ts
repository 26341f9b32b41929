import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { KV, NatsConnection, nanos, StorageType } from 'nats';
import { ServiceConfig } from '../service-config';
import { NATS_CONNECTION, SERVICE_CONFIG } from '../tokens';
import { authSettingsOf } from './auth-config';
import { openRacingCreate } from '@conclave/event-log';

const WRONG_LAST_SEQUENCE = 10071;

/**
 * How long a nonce must be remembered: as long as any request carrying it can still be accepted.
 * A signed request's timestamp is accepted within `skew` either side of the service's clock
 * (2 x skew of wall time); a JWT's `iat` up to `skew` ahead and `maxTokenAge + clockTolerance`
 * = 2 x skew behind (3 x skew). One second more covers rounding of `iat` to whole seconds.
 */
export function nonceTtlMs(authSkewMs: number): number {
  return 3 * authSkewMs + 1_000;
}

/**
 * Single-use nonces (RFC 14.4) shared by every replica: a JetStream KV bucket
 * (`<event stream>_NONCES`) where a nonce is claimed with create-if-absent, so two replicas
 * receiving the same captured request cannot both accept it. Entries expire once no request
 * carrying them can be fresh any more (`nonceTtlMs`). At start the bucket's TTL is checked and
 * raised when it is shorter (a bucket keeps the TTL it was created with, so a larger skew
 * setting would otherwise reopen a replay window); a service that cannot raise it does not start.
 */
@Injectable()
export class NonceStore implements OnApplicationBootstrap {
  private readonly logger = new Logger(NonceStore.name);
  private kv: Promise<KV> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.authMode !== 'required') return;
    await this.bucket();
    const required = this.requiredTtlMs;
    const stream = `KV_${this.bucketName}`;
    const jsm = await this.nc.jetstreamManager();
    const info = await jsm.streams.info(stream);
    const ttlMs = info.config.max_age / 1_000_000;
    if (ttlMs >= required) return;
    this.logger.warn(`nonce bucket TTL ${ttlMs} ms is shorter than the accepted window (${required} ms): raising it`);
    await jsm.streams.update(stream, { ...info.config, max_age: nanos(required) });
    const after = (await jsm.streams.info(stream)).config.max_age / 1_000_000;
    if (after < required)
      throw new Error(
        `the nonce bucket ${this.bucketName} keeps nonces ${after} ms, less than the ${required} ms a request stays acceptable`,
      );
  }

  /** True when the nonce was unused and is now taken; false for a replay. */
  async claim(key: string): Promise<boolean> {
    const kv = await this.bucket();
    try {
      await kv.create(key, new Uint8Array(0));
      return true;
    } catch (err) {
      if (isKeyExists(err)) return false;
      throw err;
    }
  }

  /**
   * Reserves `publicKey` for `holder` until the entry expires (`nonceTtlMs`): true when it was free
   * or is already the holder's. It settles participants adding one key at the same instant, on any
   * replicas, while the registry's followed list, which holds every key for good, is a moment
   * behind the log. A reservation a refused command leaves behind only expires. The `_key.` prefix
   * is never a nonce's: an escaped participant id has no `_` before a letter past F.
   */
  async reserve(publicKey: string, holder: string): Promise<boolean> {
    const kv = await this.bucket();
    const key = `_key.${publicKey}`;
    const value = new TextEncoder().encode(holder);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await kv.create(key, value);
        return true;
      } catch (err) {
        if (!isKeyExists(err)) throw err;
      }
      const entry = await kv.get(key);
      // Expired or deleted between the two requests: try to create it again.
      if (entry && entry.operation === 'PUT') return entry.string() === holder;
    }
    return false;
  }

  private get bucketName(): string {
    return `${this.config.eventStream}_NONCES`;
  }

  private get requiredTtlMs(): number {
    return nonceTtlMs(authSettingsOf(this.config).authSkewMs);
  }

  private bucket(): Promise<KV> {
    this.kv ??= openRacingCreate(() =>
      this.nc.jetstream().views.kv(this.bucketName, {
        history: 1,
        ttl: this.requiredTtlMs,
        replicas: this.config.logReplicas,
        storage: StorageType.File,
      }),
    );
    this.kv.catch(() => (this.kv = undefined));
    return this.kv;
  }
}

function isKeyExists(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: string };
  return e.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(e.message ?? '');
}
