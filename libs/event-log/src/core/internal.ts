// Helpers shared by the adapters; not part of the public surface.
import { createHash } from 'node:crypto';
import { InvalidAppendError } from './errors';
import type { EventMetadata, LogEvent } from './types';

export interface Deferred<T> {
  readonly promise: Promise<T>;
  readonly settled: boolean;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  let settled = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A rejection nobody awaits (e.g. `closed` of a subscription whose owner only awaits
  // `caughtUp`) must not crash the process: the owner observes it when it looks.
  promise.catch(() => undefined);
  return {
    promise,
    get settled() {
      return settled;
    },
    resolve: (v) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    },
    reject: (e) => {
      if (!settled) {
        settled = true;
        reject(e);
      }
    },
  };
}

/** Fixed-width decimal so that positions compare as strings in log order. */
export function pad(n: number | bigint, width = 20): string {
  return n.toString().padStart(width, '0');
}

export function validateEvents(stream: string, events: readonly LogEvent[]): void {
  if (!Array.isArray(events) || events.length === 0) {
    throw new InvalidAppendError(stream, 'an append needs at least one event');
  }
  const seen = new Set<string>();
  for (const e of events) {
    if (e === null || typeof e !== 'object') throw new InvalidAppendError(stream, 'events are JSON objects');
    if (typeof e.event_id !== 'string' || e.event_id.length === 0) {
      throw new InvalidAppendError(stream, 'every event needs a non-empty string event_id');
    }
    if (typeof e.type !== 'string' || e.type.length === 0) {
      throw new InvalidAppendError(stream, `event ${e.event_id} needs a non-empty string type`);
    }
    if (seen.has(e.event_id)) throw new InvalidAppendError(stream, `event id ${e.event_id} appears twice`);
    seen.add(e.event_id);
  }
}

const METADATA_KEY = /^[a-z][a-z0-9-]{0,63}$/;
const METADATA_VALUE = /^[\x20-\x7e]{0,512}$/;
const METADATA_MAX_ENTRIES = 16;

/** The metadata of an append, checked (it travels as message headers); undefined when empty. */
export function validMetadata(stream: string, metadata: EventMetadata | undefined): EventMetadata | undefined {
  if (metadata === undefined) return undefined;
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw new InvalidAppendError(stream, 'metadata must be an object of strings');
  }
  const entries = Object.entries(metadata);
  if (entries.length > METADATA_MAX_ENTRIES) throw new InvalidAppendError(stream, `metadata has more than ${METADATA_MAX_ENTRIES} entries`);
  for (const [k, v] of entries) {
    if (!METADATA_KEY.test(k)) throw new InvalidAppendError(stream, `metadata key ${JSON.stringify(k)} is not [a-z][a-z0-9-]* (up to 64)`);
    if (typeof v !== 'string' || !METADATA_VALUE.test(v)) {
      throw new InvalidAppendError(stream, `metadata ${k} must be printable ASCII, up to 512 characters`);
    }
  }
  return entries.length === 0 ? undefined : { ...metadata };
}

/**
 * Identity of one append, for deduplication: the event id of a single-event append (readable in
 * the server's tools), else a hash of all ids, so that a retry of the same call maps to the same
 * key and an append that shares only its first id with another does not.
 */
export function commitKey(events: readonly LogEvent[]): string {
  if (events.length === 1) return events[0].event_id;
  const h = createHash('sha256');
  for (const e of events) h.update(e.event_id).update('\n');
  return `c:${h.digest('hex').slice(0, 40)}`;
}

/** The id of the largest event, named in EventTooLargeError so the caller knows what to shrink. */
export function largestEventId(events: readonly LogEvent[], sizes: readonly number[]): string | undefined {
  let best = -1;
  let id: string | undefined;
  sizes.forEach((s, i) => {
    if (s > best) {
      best = s;
      id = events[i]?.event_id;
    }
  });
  return id;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
