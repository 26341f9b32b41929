import {
  Consumer,
  ConsumeOptions,
  ConsumerMessages,
  DiscardPolicy,
  JetStreamClient,
  JetStreamManager,
  NatsConnection,
  RetentionPolicy,
  StorageType,
} from 'nats';
import { openRacingCreate } from '@conclave/event-log';

export interface StreamSpec {
  name: string;
  subjects: string[];
  replicas?: number;
  /** How long JetStream remembers Nats-Msg-Id values for deduplication. */
  duplicateWindowMs?: number;
  maxAgeMs?: number;
}

const NS_PER_MS = 1_000_000;

/** Creates the stream, or updates its subjects if it exists: idempotent at every start. */
export function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<void> {
  return openRacingCreate(() => ensureStreamOnce(jsm, spec));
}

async function ensureStreamOnce(jsm: JetStreamManager, spec: StreamSpec): Promise<void> {
  const config = {
    name: spec.name,
    subjects: spec.subjects,
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: spec.replicas ?? 1,
    duplicate_window: (spec.duplicateWindowMs ?? 2 * 60_000) * NS_PER_MS,
    max_age: (spec.maxAgeMs ?? 0) * NS_PER_MS,
  };
  try {
    const info = await jsm.streams.info(spec.name);
    const missing = spec.subjects.filter((s) => !info.config.subjects?.includes(s));
    if (missing.length > 0) {
      await jsm.streams.update(spec.name, { ...info.config, subjects: [...(info.config.subjects ?? []), ...missing] });
    }
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.streams.add(config);
  }
}

export function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === 10059 || e?.code === '404' || /not found/i.test(e?.message ?? '');
}

/**
 * Publishes a JSON message with `Nats-Msg-Id`, so a republish after a crash (outbox replay) is
 * dropped by the server instead of reaching downstream twice.
 */
export async function publishJsonOnce(
  js: JetStreamClient,
  subject: string,
  body: unknown,
  msgId: string,
): Promise<{ duplicate: boolean; seq: number }> {
  // msgID sets the Nats-Msg-Id header.
  const ack = await js.publish(subject, new TextEncoder().encode(JSON.stringify(body)), { msgID: msgId });
  return { duplicate: ack.duplicate, seq: ack.seq };
}

/** Request/reply with a plain JSON body and a plain JSON reply. */
export async function requestJson<T>(nc: NatsConnection, subject: string, body: unknown, timeoutMs = 5_000): Promise<T> {
  const msg = await nc.request(subject, new TextEncoder().encode(JSON.stringify(body)), { timeout: timeoutMs });
  return JSON.parse(new TextDecoder().decode(msg.data)) as T;
}

/** How long `follow` waits for its consumer to be made before it gives up (see `follow`). */
export const FOLLOW_CREATE_MS = 10_000;

/**
 * Starts consuming an ordered consumer that a service follows, or fails within `withinMs`. nats.js
 * retries a create that failed (say, lost in a stream leader election) after 0.5 to 1.5 times the
 * pull expiry, up to 30 times, without a word: at its default 30 s expiry, one lost create stops
 * a feed for 15 to 45 s, and a few stop it for minutes. Here the pulls expire after 5 s (an idle
 * feed makes one pull request every 5 s), so a retry comes after 2.5 to 7.5 s; and a create still
 * not made after `withinMs` is an error the caller sees and retries, its late messages stopped.
 */
export async function follow(consumer: Consumer, options: ConsumeOptions = {}, withinMs = FOLLOW_CREATE_MS): Promise<ConsumerMessages> {
  const consuming = consumer.consume({ expires: 5_000, ...options });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Made after all: nobody reads it.
      void consuming.then((m) => m.stop()).catch(() => undefined);
      reject(new Error(`the consumer was not made within ${withinMs} ms`));
    }, withinMs);
  });
  try {
    return await Promise.race([consuming, late]);
  } finally {
    clearTimeout(timer);
  }
}
