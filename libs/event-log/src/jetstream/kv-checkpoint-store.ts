import { JSONCodec, StorageType, type KV, type NatsConnection, type NatsError } from 'nats';
import { CheckpointConflictError, EventLogConfigError, LogUnavailableError, isEventLogError } from '../core/errors';
import type { Checkpoint, CheckpointStore, LoadedCheckpoint } from '../projection/checkpoint-store';
import { openRacingCreate } from './create-race';

export interface KvCheckpointStoreOptions {
  readonly connection: NatsConnection;
  /** KV bucket name, e.g. `CONCLAVE_CHECKPOINTS`. Created when missing. */
  readonly bucket: string;
  /** Replicas when this store creates the bucket. Production: 3. Default 1. */
  readonly replicas?: number;
  readonly storage?: 'file' | 'memory';
}

const WRONG_LAST_SEQUENCE = 10071;

/**
 * Checkpoints in a JetStream KV bucket, one key per projection, value `{position, state}` as
 * JSON. Saves are compare-and-set on the key's revision, so two runners of one projection cannot
 * silently overwrite each other. The value must fit in one NATS message (max_payload): large
 * states belong in their own store, saved together with the position.
 */
export class KvCheckpointStore<S> implements CheckpointStore<S> {
  private readonly codec = JSONCodec<Checkpoint<S>>();

  private constructor(
    private readonly kv: KV,
    readonly bucket: string,
  ) {}

  static async create<S>(options: KvCheckpointStoreOptions): Promise<KvCheckpointStore<S>> {
    if (!/^[A-Za-z0-9_-]+$/.test(options.bucket ?? '')) throw new EventLogConfigError('bucket', 'letters, digits, _ and - only');
    try {
      const js = options.connection.jetstream();
      const kv = await openRacingCreate(() =>
        js.views.kv(options.bucket, {
          history: 1,
          replicas: options.replicas ?? 1,
          storage: options.storage === 'memory' ? StorageType.Memory : StorageType.File,
        }),
      );
      return new KvCheckpointStore<S>(kv, options.bucket);
    } catch (e) {
      throw new LogUnavailableError('open checkpoint bucket', options.bucket, { cause: e });
    }
  }

  async load(projection: string): Promise<LoadedCheckpoint<S> | undefined> {
    try {
      const entry = await this.kv.get(key(projection));
      if (!entry || entry.operation !== 'PUT' || entry.length === 0) return undefined;
      const { position, state } = this.codec.decode(entry.value);
      return { position, state, revision: entry.revision };
    } catch (e) {
      throw new LogUnavailableError('load checkpoint', projection, { cause: e });
    }
  }

  async save(projection: string, checkpoint: Checkpoint<S>, expectedRevision: number): Promise<number> {
    const value = this.codec.encode({ position: checkpoint.position, state: checkpoint.state });
    try {
      // create() also succeeds over a deleted key; update() compares with the last revision.
      return expectedRevision === 0
        ? await this.kv.create(key(projection), value)
        : await this.kv.update(key(projection), value, expectedRevision);
    } catch (e) {
      if (isEventLogError(e)) throw e;
      const err = e as NatsError;
      if (err.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(err.message)) {
        throw new CheckpointConflictError(projection, { cause: e });
      }
      throw new LogUnavailableError('save checkpoint', projection, { cause: e });
    }
  }

  async delete(projection: string): Promise<void> {
    try {
      await this.kv.purge(key(projection));
    } catch (e) {
      throw new LogUnavailableError('delete checkpoint', projection, { cause: e });
    }
  }

  /** Deletes the whole bucket: for tests and benchmarks. */
  async destroy(): Promise<void> {
    await this.kv.destroy();
  }
}

/** KV keys allow [-/_=.a-zA-Z0-9]; projection names are mapped, not rejected. */
function key(projection: string): string {
  return projection.replace(/[^-/_=.a-zA-Z0-9]/g, (c) => `=${c.charCodeAt(0).toString(16)}`);
}
