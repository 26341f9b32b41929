import { deserialize, serialize } from 'node:v8';
import { openRacingCreate, type Position } from '@conclave/event-log';
import type { NatsConnection, ObjectStore } from 'nats';
import { StorageType } from 'nats';

/** A reactor's folded state at a log position: restore it and follow the log from there. */
export interface Snapshot {
  readonly position: Position;
  /** The shape of `state`; a snapshot of another shape is ignored and the state rebuilt from the log. */
  readonly schema: number;
  readonly state: unknown;
}

export interface SnapshotStore {
  load(name: string): Promise<Snapshot | undefined>;
  /** Stores a snapshot encoded by `encodeSnapshot` (encoded at once, while the state is still the one at its position). */
  save(name: string, encoded: Uint8Array): Promise<void>;
}

export function encodeSnapshot(snapshot: Snapshot): Uint8Array {
  return new Uint8Array(serialize(snapshot));
}

function decodeSnapshot(bytes: Uint8Array): Snapshot | undefined {
  try {
    const s = deserialize(bytes) as Snapshot;
    return s && typeof s.position === 'string' && typeof s.schema === 'number' ? s : undefined;
  } catch {
    // Unreadable: rebuilding from the log is always correct.
    return undefined;
  }
}

/**
 * Snapshots in a JetStream object store (chunked, so a state of many megabytes fits), encoded
 * with V8's structured serialization: Maps, Sets and frozen objects come back as they were.
 * Replicas of a reactor share one name: every snapshot is a consistent (position, state) pair,
 * so whichever was saved last is a valid place to resume from.
 */
export class ObjectStoreSnapshots implements SnapshotStore {
  private constructor(private readonly os: ObjectStore) {}

  static async create(nc: NatsConnection, bucket: string, replicas = 1): Promise<ObjectStoreSnapshots> {
    const os = await openRacingCreate(() => nc.jetstream().views.os(bucket, { storage: StorageType.File, replicas }));
    return new ObjectStoreSnapshots(os);
  }

  async load(name: string): Promise<Snapshot | undefined> {
    const bytes = await this.os.getBlob(name);
    return bytes ? decodeSnapshot(bytes) : undefined;
  }

  async save(name: string, encoded: Uint8Array): Promise<void> {
    await this.os.putBlob({ name }, encoded);
  }
}

/** For unit tests of reactors. */
export class MemorySnapshots implements SnapshotStore {
  private readonly saved = new Map<string, Uint8Array>();
  saves = 0;
  async load(name: string): Promise<Snapshot | undefined> {
    const b = this.saved.get(name);
    return b ? decodeSnapshot(b) : undefined;
  }
  async save(name: string, encoded: Uint8Array): Promise<void> {
    this.saves++;
    this.saved.set(name, encoded);
  }
}
