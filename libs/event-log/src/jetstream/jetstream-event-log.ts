import {
  consumerOpts,
  DiscardPolicy,
  ErrorCode,
  headers,
  JSONCodec,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type MsgHdrs,
  type NatsConnection,
  type NatsError,
  type StoredMsg,
} from 'nats';
import {
  ConcurrencyError,
  CorruptRecordError,
  EventLogConfigError,
  EventTooLargeError,
  InvalidAppendError,
  LogUnavailableError,
  isEventLogError,
} from '../core/errors';
import { commitKey, deferred, largestEventId, pad } from '../core/internal';
import { openRacingCreate } from './create-race';
import { scanOrdered } from './ordered-scan';
import { validateEvents, validMetadata } from '../core/internal';
import { categoryMatcher, parseStreamName, validateCategory } from '../core/stream-name';
import type {
  AppendOptions,
  AppendResult,
  EventMetadata,
  CategoryFilter,
  EventHandler,
  EventLog,
  ExpectedVersion,
  LogEvent,
  ReadResult,
  StartFrom,
  StoredEvent,
  StreamVersion,
  Subscription,
} from '../core/types';

export interface JetStreamEventLogOptions {
  /** An open connection. The log closes it on `close()` only when `ownsConnection` is true. */
  readonly connection: NatsConnection;
  /** The JetStream stream holding every aggregate, e.g. `CONCLAVE_EVENTS`. */
  readonly streamName: string;
  /** Subjects are `<subjectPrefix>.evt.<category>.<id>`, e.g. prefix `conclave`. */
  readonly subjectPrefix: string;
  /** Replicas of the stream when this log creates it. Production: 3. Default 1. */
  readonly replicas?: number;
  /**
   * Check every read's commit chain against the subject's message count, as on a replicated
   * stream, where it is always done (see `read`). Tests set it to see the check on one node.
   */
  readonly checkChains?: boolean;
  /** How long the server remembers a commit id to drop retried appends. Default 2 minutes. */
  readonly duplicateWindowMs?: number;
  /** Largest encoded commit (all events of one append) in bytes. Default and maximum: the server's max_payload minus 16 KiB of headroom for headers. */
  readonly maxAppendBytes?: number;
  /** File by default; memory storage only for throwaway tests. */
  readonly storage?: 'file' | 'memory';
  /** Longest chain of commits `read` follows back by sequence before it falls back to a filtered scan. Default 64. */
  readonly readChainLimit?: number;
  /**
   * Timeout of each JetStream API request and publish acknowledgement, and the longest a read's
   * filtered scan waits for its next message. Default 5 s.
   */
  readonly requestTimeoutMs?: number;
  /** When false, the stream must exist already (e.g. created by deployment tooling). Default true. */
  readonly createStream?: boolean;
  readonly ownsConnection?: boolean;
  /**
   * Serve version and stream reads by JetStream direct get instead of the stream leader. Only
   * honoured on a stream with one replica, where no replica can lag. Default false.
   */
  readonly directReads?: boolean;
  /**
   * Told of each message on the log's subjects that this log did not append (see
   * `COMMIT_HEADER`): it is skipped, never folded. Default: nothing is told.
   */
  readonly onForeignRecord?: (record: string, reason: string) => void;
  /**
   * How long a subscription may make no progress, with no handler running, while the log says
   * it has more to deliver, before it is ended as unavailable (its reader then resubscribes from
   * its last event). Default 10 s.
   */
  readonly stallMs?: number;
}

/**
 * One append is stored as one message: JetStream 2.9 has no atomic batch publish. The append's
 * metadata (a trace context) rides in the envelope, which every reader parses anyway: as a
 * header it cost every reader a header line to decode for every event it read.
 */
interface CommitEnvelope<E> {
  readonly v: 1;
  readonly events: E[];
  readonly meta?: EventMetadata;
}

const HEADER_ROOM = 16 * 1024;
const WRONG_LAST_SEQUENCE = 10071;
const NO_MESSAGE_FOUND = 10037;
const STREAM_NOT_FOUND = 10059;
const MESSAGE_TOO_LARGE = 10054;
const INDEX_WIDTH = 6;
/** How long deliveries must pause before a catch-up is confirmed with the consumer's state. */
const CATCH_UP_CONFIRM_MS = 1_000;
const REQUEST_TIMEOUT_MS = 5_000;
/** See `JetStreamEventLogOptions.stallMs`. */
const STALL_MS = 10_000;
/** The sequence of the aggregate's previous commit (0 for the first), when the appender knew it. */
const PREV_HEADER = 'Conclave-Prev-Seq';
/**
 * Set on every commit this log appends. A message on the log's subjects without it that is not a
 * commit envelope was put there by someone else: a JetStream consumer whose creator gave it a
 * deliver subject inside the log's (the server publishes its deliveries with the account's own
 * rights). It is skipped and reported, not folded, and is no reason for a reader to stop. A
 * message with it that does not decode is corruption, and is fatal as before. Commits appended
 * before the header existed are envelopes and are read as they always were.
 */
const COMMIT_HEADER = 'Conclave-Commit';
/**
 * Where commits appended before the envelope's `meta` kept their metadata: a header
 * `Conclave-Meta-<key>` per entry. Still read; no longer written.
 */
const META_HEADER = 'Conclave-Meta-';

/**
 * Event log on NATS JetStream: one file-backed stream, one subject per aggregate, optimistic
 * concurrency with Nats-Expected-Last-Subject-Sequence, retries dropped by Nats-Msg-Id.
 * Version token: stream sequence of the aggregate's last commit. Position: `<seq>:<index>` (fixed
 * width), the index being the event's place in its commit.
 */
export class JetStreamEventLog<E extends LogEvent = LogEvent> implements EventLog<E> {
  readonly maxAppendBytes: number;
  readonly streamName: string;
  readonly subjectPrefix: string;
  private readonly codec = JSONCodec<CommitEnvelope<E>>();
  private readonly live = new Set<Subscription>();
  private closed = false;
  private readonly readChainLimit: number;
  private readonly timeoutMs: number;

  private constructor(
    private readonly options: JetStreamEventLogOptions,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    maxAppendBytes: number,
    private readonly direct: boolean,
    /** A read checks its commit chain against the subject's message count (see read). */
    private readonly checkChains: boolean,
  ) {
    this.maxAppendBytes = maxAppendBytes;
    this.streamName = options.streamName;
    this.subjectPrefix = options.subjectPrefix;
    this.readChainLimit = options.readChainLimit ?? 64;
    this.timeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  }

  /** Validates the options, then creates the stream if missing (or checks the existing one). */
  static async create<E extends LogEvent = LogEvent>(options: JetStreamEventLogOptions): Promise<JetStreamEventLog<E>> {
    const nc = options.connection;
    if (!nc || typeof nc.jetstream !== 'function') throw new EventLogConfigError('connection', 'an open NatsConnection');
    if (!/^[A-Za-z0-9_-]+$/.test(options.streamName ?? '')) {
      throw new EventLogConfigError('streamName', 'letters, digits, _ and - only');
    }
    if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(options.subjectPrefix ?? '')) {
      throw new EventLogConfigError('subjectPrefix', 'NATS tokens ([A-Za-z0-9_-]) joined by .');
    }
    const replicas = options.replicas ?? 1;
    if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new EventLogConfigError('replicas', '1 to 5');
    const windowMs = options.duplicateWindowMs ?? 120_000;
    if (!(windowMs >= 1_000)) throw new EventLogConfigError('duplicateWindowMs', 'at least 1000 ms');
    const serverMax = nc.info?.max_payload ?? 1024 * 1024;
    const ceiling = serverMax - HEADER_ROOM;
    const maxAppendBytes = options.maxAppendBytes ?? ceiling;
    if (!Number.isInteger(maxAppendBytes) || maxAppendBytes <= 0 || maxAppendBytes > ceiling) {
      throw new EventLogConfigError(
        'maxAppendBytes',
        `a positive integer up to the server's max_payload (${serverMax}) minus ${HEADER_ROOM} bytes of headroom`,
      );
    }
    const timeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const subjects = `${options.subjectPrefix}.evt.>`;
    let jsm: JetStreamManager;
    let direct = options.directReads === true && replicas === 1;
    let replicated = replicas > 1;
    try {
      jsm = await nc.jetstreamManager({ timeout });
      const existing = await jsm.streams.info(options.streamName).catch((e: NatsError) => {
        if (apiCode(e) === STREAM_NOT_FOUND || e.code === '404') return undefined;
        throw e;
      });
      if (existing) {
        if (!existing.config.subjects?.includes(subjects)) {
          throw new EventLogConfigError(
            'streamName',
            `stream ${options.streamName} exists without subject ${subjects} (has ${existing.config.subjects?.join(', ')})`,
          );
        }
        direct = options.directReads === true && existing.config.allow_direct === true && existing.config.num_replicas === 1;
        replicated = existing.config.num_replicas > 1;
      } else if (options.createStream === false) {
        throw new EventLogConfigError('streamName', `stream ${options.streamName} does not exist and createStream is false`);
      } else {
        await openRacingCreate(() =>
          jsm.streams.add({
            name: options.streamName,
            subjects: [subjects],
            storage: options.storage === 'memory' ? StorageType.Memory : StorageType.File,
            num_replicas: replicas,
            retention: RetentionPolicy.Limits,
            discard: DiscardPolicy.Old,
            // An event log is never trimmed by age or count.
            max_age: 0,
            max_msgs: -1,
            max_bytes: -1,
            max_msg_size: maxAppendBytes + HEADER_ROOM,
            duplicate_window: windowMs * 1_000_000,
            // Cheap reads of one subject's last message (freshness checks), served by any replica.
            allow_direct: true,
            deny_delete: true,
            deny_purge: false,
          }),
        );
      }
    } catch (e) {
      if (isEventLogError(e)) throw e;
      throw new LogUnavailableError('create stream', undefined, { cause: e });
    }
    return new JetStreamEventLog<E>(
      options,
      nc,
      nc.jetstream({ timeout }),
      jsm,
      maxAppendBytes,
      direct,
      replicated || options.checkChains === true,
    );
  }

  subjectOf(stream: string): string {
    const { category, id } = parseStreamName(stream);
    return `${this.subjectPrefix}.evt.${category}.${id}`;
  }

  async append(stream: string, events: readonly E[], expected: ExpectedVersion, options?: AppendOptions): Promise<AppendResult> {
    const subject = this.subjectOf(stream);
    validateEvents(stream, events);
    const metadata = validMetadata(stream, options?.metadata);
    let lastSubjectSequence: number | undefined;
    if (expected === 'no_stream') lastSubjectSequence = 0;
    else if (expected !== 'any') {
      if (!/^[1-9]\d*$/.test(expected)) {
        throw new InvalidAppendError(stream, `version token ${JSON.stringify(expected)} was not issued by this log`);
      }
      lastSubjectSequence = Number(expected);
    }
    // The limit is on the events: the metadata's room (16 entries of 512 characters at most) is in HEADER_ROOM.
    const envelope = JSON.stringify({ v: 1, events });
    const size = Buffer.byteLength(envelope);
    if (size > this.maxAppendBytes) {
      const sizes = events.map((e) => Buffer.byteLength(JSON.stringify(e)));
      throw new EventTooLargeError(stream, size, this.maxAppendBytes, largestEventId(events, sizes));
    }
    const payload = Buffer.from(metadata ? `${envelope.slice(0, -1)},"meta":${JSON.stringify(metadata)}}` : envelope);
    const msgID = commitKey(events);
    const last = events.length - 1;
    try {
      // The server checks the duplicate window before the expected sequence, so a retry of a
      // commit that succeeded returns the original sequence instead of a conflict (verified on 2.9.10).
      const h = headers();
      // `append`, not `set`: the headers are new, and `set` searches them to delete first.
      h.append(COMMIT_HEADER, '1');
      if (lastSubjectSequence !== undefined) h.append(PREV_HEADER, String(lastSubjectSequence));
      const ack = await this.js.publish(subject, payload, {
        headers: h,
        msgID,
        expect: lastSubjectSequence === undefined ? undefined : { lastSubjectSequence },
      });
      return { version: String(ack.seq), position: position(ack.seq, last), duplicate: ack.duplicate };
    } catch (e) {
      const err = e as NatsError;
      if (apiCode(err) === WRONG_LAST_SEQUENCE) {
        const actualSeq = Number(/wrong last sequence: (\d+)/.exec(err.api_error?.description ?? err.message)?.[1]);
        // Past the duplicate window the server no longer knows the commit; if it is still the
        // aggregate's last message, this is a late retry, not a conflict.
        if (actualSeq > 0) {
          const head = await this.lastMessage(subject).catch(() => undefined);
          if (head && head.seq === actualSeq && head.header?.get('Nats-Msg-Id') === msgID) {
            return { version: String(actualSeq), position: position(actualSeq, last), duplicate: true };
          }
        }
        const actual = Number.isFinite(actualSeq) ? (actualSeq === 0 ? 'no_stream' : String(actualSeq)) : 'unknown';
        throw new ConcurrencyError(stream, expected, actual, { cause: err });
      }
      if (err.code === ErrorCode.MaxPayloadExceeded || apiCode(err) === MESSAGE_TOO_LARGE) {
        throw new EventTooLargeError(stream, payload.byteLength, this.maxAppendBytes, undefined, { cause: err });
      }
      throw new LogUnavailableError('append', stream, { cause: err });
    }
  }

  async read(stream: string): Promise<ReadResult<E>> {
    const subject = this.subjectOf(stream);
    const { category } = parseStreamName(stream);
    // The last message (cheap) tells where the aggregate ends, so the filtered read knows when to stop.
    const head = await this.lastMessage(subject).catch((e: unknown) => {
      throw new LogUnavailableError('read', stream, { cause: e });
    });
    if (!head) return { stream, exists: false, version: 'no_stream', events: [] };
    // On a replicated stream the subject's message count, asked while the chain is walked, tells
    // whether the chain holds every commit: a clustered server can let a commit in after a
    // predecessor another commit already had (a stale expected sequence, during a leader
    // election), and the chain passes by it. A subscription delivers it, so a read must too: the
    // scan does. One node checks the expected sequence in order, and the count costs a 2.9 server
    // a walk over its message blocks (a cold read's p50 went from 2 to 4 ms with a million
    // events): it is not asked there, nor for an aggregate that does not exist.
    const counting = this.checkChains ? this.messagesOn(subject) : undefined;
    counting?.catch(() => undefined); // awaited below, unless the walk fails first
    const walked = await this.walkChain(stream, subject, head);
    const count = await counting?.catch((e: unknown) => {
      throw new LogUnavailableError('read', stream, { cause: e });
    });
    const chain = walked && (count === undefined || walked.length === count) ? walked : undefined;
    const events: StoredEvent<E>[] = [];
    if (chain) {
      for (const m of chain) events.push(...this.unpack(stream, category, m.seq, m.data, prevOf(m.header), m.header));
    } else {
      await this.scanSubject(stream, category, subject, head.seq, events);
    }
    return { stream, exists: true, version: String(head.seq), events };
  }

  async version(stream: string): Promise<StreamVersion | 'no_stream'> {
    const subject = this.subjectOf(stream);
    try {
      const head = await this.lastMessage(subject);
      return head ? String(head.seq) : 'no_stream';
    } catch (e) {
      throw new LogUnavailableError('version', stream, { cause: e });
    }
  }

  async head(): Promise<StartFrom> {
    try {
      const info = await this.jsm.streams.info(this.streamName);
      // After every event of the last commit, whatever its size.
      return info.state.last_seq === 0 ? 'start' : `${pad(info.state.last_seq)}:${'9'.repeat(INDEX_WIDTH)}`;
    } catch (e) {
      throw new LogUnavailableError('head', undefined, { cause: e });
    }
  }

  /** The stream sequence of the newest message on `subject` (0 when none), as the stream leader knows it. */
  private async newestOn(subject: string): Promise<number> {
    try {
      return (await this.jsm.streams.getMessage(this.streamName, { last_by_subj: subject })).seq;
    } catch (e) {
      if ((e as { api_error?: { err_code?: number } }).api_error?.err_code === NO_MESSAGE_FOUND) return 0;
      throw e;
    }
  }

  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    const matches = categoryMatcher(categories);
    const { seq: fromSeq, index: fromIndex } = parsePosition(from);
    // 2.9 filters on one subject only: one category is filtered by the server, several by us.
    const filter =
      categories !== '*' && categories.length === 1
        ? `${this.subjectPrefix}.evt.${validateCategory(categories[0])}.*`
        : `${this.subjectPrefix}.evt.>`;
    const caughtUp = deferred();
    const closed = deferred();
    let stopped = false;
    let sub: Awaited<ReturnType<JetStreamClient['subscribe']>> | undefined;
    // Messages handled by this consumer, compared with the consumer's delivered count when the
    // server says nothing is pending (stream sequences would not do: a filtered consumer skips).
    let handled = 0;
    let target: number | undefined;
    // The consumer sequence of the last message handled, and when: for confirming a catch-up.
    // The consumer sequence restarts at 1 when nats.js recreates an ordered consumer (new name).
    let lastDelivery = 0;
    let deliveredBy: string | undefined;
    let lastHandledAt = Date.now();
    // The stream sequence of the last message delivered (handled or skipped), for comparing with the log's newest.
    let lastStreamSeq = fromSeq;
    // A handler still running is progress, however slow: never a stall.
    let handling = false;

    const deliver = async (m: JsMsg): Promise<void> => {
      const { stream, category } = this.streamOfSubject(m.subject);
      if (matches(category)) {
        const events = this.unpack(stream, category, m.seq, m.data, prevOf(m.headers), m.headers);
        handling = true;
        try {
          for (const e of events) {
            if (stopped) return;
            if (m.seq === fromSeq && indexOf(e.position) <= fromIndex) continue;
            try {
              await handler(e);
            } catch (error) {
              throw new HandlerFailure(error);
            }
          }
        } finally {
          handling = false;
        }
      }
      handled++;
      lastStreamSeq = m.seq;
      lastDelivery = m.info.deliverySequence;
      deliveredBy = m.info.consumer;
      lastHandledAt = Date.now();
      if (m.info.pending === 0 || (target !== undefined && handled >= target)) caughtUp.resolve();
    };

    const fail = (e: unknown): void => {
      if (closed.settled) return;
      stopped = true;
      sub?.unsubscribe();
      caughtUp.reject(e);
      closed.reject(e);
    };
    const stallMs = this.options.stallMs ?? STALL_MS;
    const stalled = (why: string): void =>
      fail(new LogUnavailableError('subscribe', undefined, { cause: new Error(`the subscription stalled: ${why}`) }));

    // Every second, the subscription's progress is checked, so that it either moves on or ends.
    // - Before catch-up: the pending counts in deliveries are the server's estimate, and
    //   nats-server 2.9 can over-count a filtered consumer's (seen after a restart under
    //   concurrent appends: delivery ended with "8 pending" that never came), which left a
    //   catch-up waiting for ever. So once deliveries pause, the consumer decides: nothing
    //   pending, and its last delivery handled. Nothing handled for `stallMs` while it says more
    //   is pending (or cannot say), and the catch-up fails as unavailable.
    // - After catch-up: a consumer can stop delivering without a word. Seen after a stream leader
    //   was killed in a cluster: the consumer, recreated by the client on a replica that had
    //   stopped following, still heartbeated and reported nothing pending. So its own word is
    //   not taken: the stream leader's newest message on the subscription's subject is. Behind
    //   it at two checks `stallMs` apart with nothing handled in between, and the subscription
    //   ends as unavailable (its reader resubscribes from its last event).
    let checking = false;
    let lastCheckAt = 0;
    let behindAt: number | undefined;
    const watch = setInterval(() => {
      if (stopped || closed.settled) return clearInterval(watch);
      const idleMs = Date.now() - lastHandledAt;
      if (checking || handling || idleMs < CATCH_UP_CONFIRM_MS) return;
      if (!sub || target === undefined) {
        // Still subscribing: a server that never answers is a stall all the same.
        if (idleMs >= stallMs) stalled(`no consumer after ${idleMs} ms`);
        return;
      }
      const current = sub;
      // The checks below answer later: by then a message may be in its handler, or handled. A
      // subscription ended under a running handler would be resumed before that handler sets
      // its reader's position, and the event applied twice.
      const since = lastHandledAt;
      const idleStill = (): boolean => !handling && lastHandledAt === since;
      if (!caughtUp.settled) {
        checking = true;
        current
          .consumerInfo()
          .then(
            (info) => {
              const delivered = deliveredBy === undefined || info.name === deliveredBy ? lastDelivery : 0;
              if (info.num_pending === 0 && info.delivered.consumer_seq === delivered) caughtUp.resolve();
              else if (idleMs >= stallMs && idleStill())
                stalled(`nothing handled for ${idleMs} ms before catch-up, ${info.num_pending} pending`);
            },
            // A consumer the server no longer knows delivers nothing more.
            (err: Error) => {
              if (idleMs >= stallMs && idleStill())
                stalled(`nothing handled for ${idleMs} ms before catch-up, consumer state unreadable (${err.message})`);
            },
          )
          .finally(() => (checking = false));
        return;
      }
      // Once caught up, an idle subscription is asked rarely: most are idle most of the time.
      if (idleMs < stallMs || Date.now() - lastCheckAt < stallMs) return;
      checking = true;
      lastCheckAt = Date.now();
      const seen = lastStreamSeq;
      this.newestOn(filter)
        .then(
          (newest) => {
            if (newest <= seen) return void (behindAt = undefined);
            if (behindAt !== seen || !idleStill()) return void (behindAt = seen);
            stalled(`nothing handled for ${Date.now() - lastHandledAt} ms while the log is at ${newest} and this subscription at ${seen}`);
          },
          () => undefined, // the log unreachable: nothing to compare with; the next check asks again
        )
        .finally(() => (checking = false));
    }, CATCH_UP_CONFIRM_MS);
    watch.unref();

    const run = async (): Promise<void> => {
      const opts = consumerOpts();
      opts.orderedConsumer();
      opts.filterSubject(filter);
      if (fromSeq === 0) opts.deliverAll();
      else opts.startSequence(fromSeq);
      try {
        sub = await this.js.subscribe(filter, opts);
        if (stopped) return void sub.unsubscribe();
        // Caught up = every matching message that existed now is handled. Waiting for a delivery
        // with nothing pending instead would never end while appends keep coming.
        const info = await sub.consumerInfo();
        target = info.delivered.consumer_seq + info.num_pending;
        if (handled >= target) caughtUp.resolve();
      } catch (e) {
        throw new LogUnavailableError('subscribe', undefined, { cause: e });
      }
      let iterated = false;
      try {
        for await (const m of sub) {
          iterated = true;
          if (stopped) break;
          await deliver(m);
        }
      } catch (e) {
        // The handler's own error ends the subscription unchanged: the consumer decides what it means.
        if (e instanceof HandlerFailure) throw e.error;
        if (isEventLogError(e) || !iterated) throw e;
        throw new LogUnavailableError('subscribe', undefined, { cause: e });
      }
      if (!stopped) {
        throw new LogUnavailableError('subscribe', undefined, { cause: new Error('subscription ended by the server or connection') });
      }
    };

    const handle: Subscription = {
      caughtUp: caughtUp.promise,
      closed: closed.promise,
      stop: async () => {
        stopped = true;
        sub?.unsubscribe();
        await closed.promise.catch(() => undefined);
      },
    };
    this.live.add(handle);
    run()
      .then(() => {
        if (!closed.settled) closed.resolve();
      }, fail)
      .finally(() => {
        clearInterval(watch);
        this.live.delete(handle);
      });
    return handle;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.live].map((s) => s.stop()));
    if (this.options.ownsConnection) await this.nc.close();
  }

  /** Deletes the whole stream: for tests and benchmarks only. */
  async deleteStream(): Promise<void> {
    await this.jsm.streams.delete(this.streamName);
  }

  /**
   * Reads that decide (a version, a chain, a head) come from the stream leader. Direct get may be
   * served by a replica that lags the leader, and a stale version would let a writer decide on
   * old state; it is used only when the deployment asks for it on a single-replica stream.
   */
  private getMessage(query: { seq: number } | { last_by_subj: string }): Promise<StoredMsg> {
    return this.direct
      ? (this.jsm as unknown as { direct: DirectGet }).direct.getMessage(this.streamName, query)
      : this.jsm.streams.getMessage(this.streamName, query);
  }

  /** How many messages the stream holds on `subject`, as its leader says; undefined when it does not say. */
  private async messagesOn(subject: string): Promise<number | undefined> {
    const info = await this.jsm.streams.info(this.streamName, { subjects_filter: subject });
    const subjects = info.state.subjects as Record<string, number> | undefined;
    return subjects ? (subjects[subject] ?? 0) : undefined;
  }

  /** The last message of a subject, or undefined when the subject is empty. */
  private async lastMessage(subject: string): Promise<StoredMsg | undefined> {
    try {
      return await this.getMessage({ last_by_subj: subject });
    } catch (e) {
      const err = e as NatsError;
      if (apiCode(err) === NO_MESSAGE_FOUND || err.code === '404') return undefined;
      throw e;
    }
  }

  /**
   * Every commit appended with a known expected version names its predecessor (PREV_HEADER), so
   * an aggregate can be loaded by walking back from its last message with gets by sequence
   * (~0.1-0.2 ms each) instead of a filtered scan (~5 ms of server CPU on a large stream).
   * Returns the commits oldest first, or undefined when the chain is broken by an 'any' append,
   * or longer than `readChainLimit`.
   */
  private async walkChain(stream: string, subject: string, head: StoredMsg): Promise<StoredMsg[] | undefined> {
    const chain = [head];
    let current = head;
    try {
      for (let hops = 0; hops <= this.readChainLimit; hops++) {
        const prev = current.header?.get(PREV_HEADER);
        if (prev === '0') return chain.reverse();
        if (!prev || !/^\d+$/.test(prev) || hops === this.readChainLimit) return undefined;
        const m = await this.getMessage({ seq: Number(prev) });
        if (m.subject !== subject) {
          throw new CorruptRecordError(`${this.streamName}#${current.seq}`, `${PREV_HEADER} points outside ${subject}`);
        }
        chain.push(m);
        current = m;
      }
    } catch (e) {
      if (isEventLogError(e)) throw e;
      throw new LogUnavailableError('read', stream, { cause: e });
    }
    return undefined;
  }

  /**
   * The fallback: a filtered ordered consumer over the aggregate's subject, up to its last commit,
   * failing as unavailable when the consumer goes quiet for a request timeout (see `scanOrdered`).
   */
  private async scanSubject(stream: string, category: string, subject: string, lastSeq: number, into: StoredEvent<E>[]): Promise<void> {
    // The subject's messages in order: each one's predecessor is the one before it.
    let before: number | undefined;
    const events: StoredEvent<E>[] = [];
    try {
      await scanOrdered(this.js, subject, lastSeq, this.timeoutMs, (m) => {
        events.push(...this.unpack(stream, category, m.seq, m.data, before === undefined ? 'no_stream' : String(before), m.headers));
        before = m.seq;
      });
    } catch (e) {
      if (isEventLogError(e)) throw e;
      throw new LogUnavailableError('read', stream, { cause: e });
    }
    into.push(...events);
  }

  private streamOfSubject(subject: string): { stream: string; category: string } {
    const rest = subject.slice(this.subjectPrefix.length + 5); // '<prefix>.evt.'
    const dot = rest.lastIndexOf('.');
    const category = rest.slice(0, dot);
    return { stream: `${category}-${rest.slice(dot + 1)}`, category };
  }

  private unpack(
    stream: string,
    category: string,
    seq: number,
    data: Uint8Array,
    previous: StreamVersion | 'no_stream' | undefined,
    header: MsgHdrs | undefined,
  ): StoredEvent<E>[] {
    const record = `${this.streamName}#${seq}`;
    const ours = header?.get(COMMIT_HEADER) === '1';
    let envelope: CommitEnvelope<E> | undefined;
    let problem: 'not JSON' | 'not a commit envelope (v: 1, events: [...])' | undefined;
    let cause: unknown;
    try {
      envelope = this.codec.decode(data);
      if (!envelope || envelope.v !== 1 || !Array.isArray(envelope.events) || !isMetadata(envelope.meta))
        problem = 'not a commit envelope (v: 1, events: [...])';
    } catch (e) {
      problem = 'not JSON';
      cause = e;
    }
    if (problem !== undefined || !envelope) {
      if (ours) throw new CorruptRecordError(record, problem ?? 'not JSON', cause === undefined ? undefined : { cause });
      this.options.onForeignRecord?.(record, `not appended by this log (${problem})`);
      return [];
    }
    const version = String(seq);
    const last = envelope.events.length - 1;
    const metadata = envelope.meta ?? metadataOf(header);
    return envelope.events.map((event, i) => ({
      stream,
      category,
      event,
      position: position(seq, i),
      version,
      previous,
      endOfCommit: i === last,
      ...(metadata ? { metadata } : {}),
    }));
  }
}

/** nats.js 2.29 implements `jsm.direct` but leaves it out of the JetStreamManager type. */
interface DirectGet {
  getMessage(stream: string, query: { seq: number } | { last_by_subj: string }): Promise<StoredMsg>;
}

class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/** The commit's predecessor from its header: `'no_stream'` for 0, undefined for an `'any'` append. */
function prevOf(h: MsgHdrs | undefined): StreamVersion | 'no_stream' | undefined {
  const prev = h?.get(PREV_HEADER);
  if (!prev || !/^\d+$/.test(prev)) return undefined;
  return prev === '0' ? 'no_stream' : prev;
}

/** An envelope's `meta`: absent, or an object of strings. */
function isMetadata(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return false;
  for (const v of Object.values(meta)) if (typeof v !== 'string') return false;
  return true;
}

/** An older commit's metadata, from its `Conclave-Meta-*` headers; undefined when it has none. */
function metadataOf(h: MsgHdrs | undefined): EventMetadata | undefined {
  if (!h) return undefined;
  let metadata: Record<string, string> | undefined;
  // One pass over the entries: `get` would search the keys again for each one, on every event
  // every reader reads.
  for (const [k, values] of h) {
    if (k.startsWith(META_HEADER) && values.length > 0) (metadata ??= {})[k.slice(META_HEADER.length)] = values[0];
  }
  return metadata;
}

function position(seq: number, index: number): string {
  return `${pad(seq)}:${pad(index, INDEX_WIDTH)}`;
}

function indexOf(p: string): number {
  return Number(p.slice(p.indexOf(':') + 1));
}

function parsePosition(from: StartFrom): { seq: number; index: number } {
  if (from === 'start') return { seq: 0, index: -1 };
  const m = /^(\d{20}):(\d{6})$/.exec(from);
  if (!m) throw new InvalidAppendError('(subscription)', `checkpoint ${JSON.stringify(from)} was not issued by this log`);
  return { seq: Number(m[1]), index: Number(m[2]) };
}

function apiCode(e: unknown): number | undefined {
  return (e as NatsError | undefined)?.api_error?.err_code;
}
