import { AcpError } from '@conclave/acp-protocol';
import { isNotFound } from '@conclave/messaging';
import {
  AckPolicy,
  Consumer,
  ConsumerConfig,
  ConsumerEvents,
  ConsumerInfo,
  ConsumerMessages,
  DeliverPolicy,
  JetStreamManager,
  JetStreamManagerOptions,
  JetStreamOptions,
  NatsConnection,
} from 'nats';
import type { Tracer } from '@opentelemetry/api';
import { ConclaveError } from './conclave-error';
import { ReadOnce } from './read-once';
import { receiveSpan } from './tracing';

/**
 * Feeds: durable pull consumers that an operator (or a service) makes for a client that may not
 * create consumers. Under NATS accounts (deploy/nats/nats-accounts.conf) agents, readers and
 * humans create no consumer at all: a create request may name a deliver subject, and the server
 * then publishes the consumer's messages there itself, past the creator's publish permissions,
 * into whatever stream captures that subject. Such a client binds to its feed by name
 * (`decisions({durable, bind: true})`) and only reads its info, pulls and acknowledges.
 */

/**
 * The connection with `jetstream()` and `jetstreamManager()` using the JetStream API under
 * `apiPrefix`. Under the accounts config (deploy/nats/nats-accounts.conf) clients are in an
 * account without JetStream that imports the services' feed API as `$JS.conclave.API.…`, so that
 * an answer of the JetStream API never lands in the services' account (a request's reply subject
 * is the requester's choice). The manager asks for no account info by default (`checkAPI: false`):
 * that is not imported. Everything else is the connection itself.
 */
export function withJetStreamApiPrefix(nc: NatsConnection, apiPrefix: string): NatsConnection {
  return new Proxy(nc, {
    get(target, key) {
      if (key === 'jetstream') return (opts: JetStreamOptions = {}) => target.jetstream({ apiPrefix, ...opts });
      if (key === 'jetstreamManager') {
        return (opts: JetStreamManagerOptions = {}) => target.jetstreamManager({ apiPrefix, checkAPI: false, ...opts });
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export type FeedErrorCode = 'FEED_NOT_PROVISIONED' | 'FEED_CONFLICT' | 'FEED_DELETED';

/** A feed that is missing, is not what the caller asked for, or went away while read; `code` is stable. */
export class FeedError extends Error {
  override readonly name = 'FeedError';
  constructor(
    readonly code: FeedErrorCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

export interface FeedProvision {
  /** The stream (`ACP_DECISIONS`, `ACP_PROPOSALS`, `COUNCIL_DECISIONS`, `ACP_ESCALATIONS`...). */
  stream: string;
  /** The durable name: `feed-<nats user>` under the accounts config. */
  durable: string;
  /** Only messages on this subject (wildcards allowed), e.g. `acp.v1.decisions.risk.>`; all when absent. */
  filter?: string;
  /** Where the feed starts: every message kept (`all`, default) or only new ones. */
  from?: 'all' | 'new';
  /** How long the server waits for an acknowledgement before delivering again (default 30 s). */
  ackWaitMs?: number;
}

export interface ProvisionedFeed {
  /** False when a feed of that name with that filter already existed (nothing changed). */
  created: boolean;
  info: ConsumerInfo;
}

/** The consumer a feed is: durable, pull (no deliver subject), explicit acknowledgements. */
export function feedConsumerConfig(feed: FeedProvision): Partial<ConsumerConfig> {
  return {
    durable_name: feed.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: feed.from === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    ...(feed.filter ? { filter_subject: feed.filter } : {}),
    ...(feed.ackWaitMs ? { ack_wait: feed.ackWaitMs * 1_000_000 } : {}),
  };
}

/**
 * Makes a feed, or finds it: idempotent. A consumer of that name that is a push consumer or
 * filters on another subject is a FEED_CONFLICT (delete it first if it should go).
 */
export async function provisionFeed(jsm: JetStreamManager, feed: FeedProvision): Promise<ProvisionedFeed> {
  const existing = await feedInfo(jsm, feed.stream, feed.durable);
  if (existing) return { created: false, info: checkProvisioned(existing, feed.filter) };
  try {
    return { created: true, info: await jsm.consumers.add(feed.stream, feedConsumerConfig(feed)) };
  } catch (err) {
    // Provisioned twice at once: the other one made it.
    const raced = await feedInfo(jsm, feed.stream, feed.durable);
    if (!raced) throw err;
    return { created: false, info: checkProvisioned(raced, feed.filter) };
  }
}

async function feedInfo(jsm: JetStreamManager, stream: string, durable: string): Promise<ConsumerInfo | undefined> {
  try {
    return await jsm.consumers.info(stream, durable);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function checkProvisioned(info: ConsumerInfo, filter: string | undefined): ConsumerInfo {
  const where = `${info.stream_name} ${info.name}`;
  if (info.config.deliver_subject)
    throw new FeedError('FEED_CONFLICT', `${where} is a push consumer (delivers to a subject); a feed is pull only`);
  if ((info.config.filter_subject ?? '') !== (filter ?? '')) {
    throw new FeedError('FEED_CONFLICT', `${where} filters on "${info.config.filter_subject ?? ''}", not "${filter ?? ''}"`);
  }
  return info;
}

/**
 * Binds to a provisioned feed without creating anything (consumer info, then pulls). `filter`,
 * when given, must be the feed's own filter: the operator chose what the feed carries.
 */
export async function bindFeed(nc: NatsConnection, stream: string, durable: string, filter?: string): Promise<Consumer> {
  let consumer: Consumer;
  try {
    consumer = await nc.jetstream().consumers.get(stream, durable);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    throw new FeedError(
      'FEED_NOT_PROVISIONED',
      `no feed ${durable} on ${stream}: an operator makes it (conclave feeds provision --stream ${stream} --durable ${durable})`,
    );
  }
  const info = await consumer.info(true);
  if (info.config.deliver_subject) throw new FeedError('FEED_CONFLICT', `${stream} ${durable} is a push consumer; a feed is pull only`);
  if (filter !== undefined && (info.config.filter_subject ?? '') !== filter) {
    throw new FeedError('FEED_CONFLICT', `the feed ${durable} on ${stream} carries "${info.config.filter_subject ?? ''}", not "${filter}"`);
  }
  return consumer;
}

/** How many sequences read above the ack floor before the reader asks the server for it again. */
const ASK_ACK_FLOOR_EVERY = 4_096;

/**
 * Messages of a consumer, in stream order, parsed and acknowledged after the loop body returns;
 * a redelivery of a message already read (a body slower than the ack wait, an acknowledgement
 * lost) is dropped (ReadOnce). A delivery lost in transit (the server restarting mid-pull) comes
 * back after the ack wait, after newer messages, and is read then: once, out of order. When the
 * stream or the consumer is deleted under it, the iteration ends with FEED_DELETED: nats.js
 * would wait for them to come back, and a feed's consumer never comes back by itself (a deleted
 * stream takes its consumers with it), so the reader would wait for ever, told nothing. The
 * status events say so only once the server answers that they are missing: a server restarting
 * or unreachable ends nothing.
 */
export async function* readConsumer<T>(
  consumer: Consumer,
  parse: (input: unknown) => T,
  tracer: Tracer,
  signal?: AbortSignal,
  askAckFloorEvery = ASK_ACK_FLOOR_EVERY,
): AsyncGenerator<T> {
  const messages = await consumer.consume({ max_messages: 256 });
  // stop(), not close(): on nats-server 2.9, close() after the loop ended waits forever.
  const stop = () => messages.stop();
  if (signal?.aborted) stop();
  signal?.addEventListener('abort', stop, { once: true });
  let deleted: FeedError | undefined;
  void watchMissing(messages, (what) => {
    deleted ??= new FeedError('FEED_DELETED', `${what}: the feed ended`);
    stop();
  });
  const once = new ReadOnce();
  let askFloorAt = askAckFloorEvery;
  try {
    for await (const m of messages) {
      if (!once.isNew(m.seq)) {
        m.ack(); // a copy of what was read: its acknowledgement may be the one lost
        continue;
      }
      once.markRead(m.seq);
      // The reader's loop body runs while the generator is suspended at the yield: the span in
      // the message's trace lasts until the body asks for the next one. (The body runs in its
      // caller's context, not the span's: a generator cannot lend it one.)
      const received = receiveSpan(tracer, m.subject, m.headers);
      try {
        yield readMessage(m.data, parse);
      } finally {
        received?.end();
      }
      m.ack();
      if (once.size >= askFloorAt) {
        // Not answered (the server away): asked again later; meanwhile the set only holds more.
        const floor = await consumer.info().then(
          (i) => i.ack_floor.stream_seq,
          () => 0,
        );
        once.acknowledgedThrough(floor);
        askFloorAt = once.size + askAckFloorEvery;
      }
    }
    if (deleted) throw deleted;
  } finally {
    signal?.removeEventListener('abort', stop);
    stop();
  }
}

const MISSING: Partial<Record<string, string>> = {
  [ConsumerEvents.StreamNotFound]: 'the stream was deleted',
  [ConsumerEvents.ConsumerNotFound]: 'the consumer was deleted',
  [ConsumerEvents.ConsumerDeleted]: 'the consumer was deleted',
};

/** Calls `gone` at the first status event of `messages` that says its stream or consumer is missing. */
async function watchMissing(messages: ConsumerMessages, gone: (what: string) => void): Promise<void> {
  for await (const s of await messages.status()) {
    const what = MISSING[s.type];
    if (what) return gone(what);
  }
}

const decoder = new TextDecoder();

/** A stream message as the wire object `parse` checks; anything else is a ConclaveError with the code. */
export function readMessage<T>(data: Uint8Array, parse: (input: unknown) => T): T {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    throw new ConclaveError({ code: 'INVALID_JSON', message: 'a stream message is not JSON' });
  }
  try {
    return parse(body);
  } catch (err) {
    if (err instanceof AcpError) throw new ConclaveError(err.toJSON());
    throw err;
  }
}
