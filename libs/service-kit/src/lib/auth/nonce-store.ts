import { Inject, Injectable } from '@nestjs/common';
import { KV, NatsConnection, StorageType } from 'nats';
import { ServiceConfig } from '../service-config';
import { NATS_CONNECTION, SERVICE_CONFIG } from '../tokens';
import { authSettingsOf } from './auth-config';

const WRONG_LAST_SEQUENCE = 10071;

/**
 * Single-use nonces (RFC 14.4) shared by every replica: a JetStream KV bucket
 * (`<event stream>_NONCES`) where a nonce is claimed with create-if-absent, so two replicas
 * receiving the same captured request cannot both accept it. Entries expire after twice the
 * freshness window: by then the request's timestamp is stale and refused anyway.
 */
@Injectable()
export class NonceStore {
  private kv: Promise<KV> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** True when the nonce was unused and is now taken; false for a replay. */
  async claim(key: string): Promise<boolean> {
    const kv = await this.bucket();
    try {
      await kv.create(key, new Uint8Array(0));
      return true;
    } catch (err) {
      const e = err as { api_error?: { err_code?: number }; message?: string };
      if (e.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(e.message ?? '')) return false;
      throw err;
    }
  }

  private bucket(): Promise<KV> {
    this.kv ??= this.nc.jetstream().views.kv(`${this.config.eventStream}_NONCES`, {
      history: 1,
      ttl: 2 * authSettingsOf(this.config).authSkewMs + 1_000,
      replicas: this.config.logReplicas,
      storage: StorageType.File,
    });
    this.kv.catch(() => (this.kv = undefined));
    return this.kv;
  }
}
