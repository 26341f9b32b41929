import {
  ANY,
  AccessDeniedError,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  MaxAppendSizeExceededError,
  NO_STREAM,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamRecordedEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type AppendExpectedRevision,
  type Position as EsdbPosition,
} from '@eventstore/db-client';
import {
  ConcurrencyError,
  CorruptRecordError,
  EventLogConfigError,
  EventTooLargeError,
  InvalidAppendError,
  InvalidStreamNameError,
  LogUnavailableError,
  isEventLogError,
} from '../core/errors';
import { deferred, largestEventId, pad, validateEvents, validMetadata } from '../core/internal';
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
import { eventIdToUuid } from './event-id-uuid';

export interface EventStoreDbEventLogOptions {
  /** A client, e.g. `EventStoreDBClient.connectionString('esdb://localhost:2113?tls=false')`. */
  readonly client: EventStoreDBClient;
  /** Largest encoded append (JSON of all events) in bytes. Default 1 MiB minus 16 KiB, under the server's default maxAppendSize of 1 MiB. */
  readonly maxAppendBytes?: number;
  /** How often (in matching events searched) a filtered subscription reports its position. Default 32. */
  readonly checkpointInterval?: number;
  /** When true, `close()` disposes the client. */
  readonly ownsClient?: boolean;
}

/**
 * Event log on EventStoreDB. Each event is stored whole as the JSON data of an ESDB event with the
 * same `type`, under a UUID derived from its `event_id` (so the server deduplicates retries).
 * Version token: the stream revision. Position: `<commit>:<prepare>` of $all (fixed width).
 */
export class EventStoreDbEventLog<E extends LogEvent = LogEvent> implements EventLog<E> {
  readonly maxAppendBytes: number;
  private readonly client: EventStoreDBClient;
  private readonly live = new Set<Subscription>();
  private readonly checkpointInterval: number;

  constructor(private readonly options: EventStoreDbEventLogOptions) {
    if (!options?.client) throw new EventLogConfigError('client', 'an EventStoreDBClient');
    this.client = options.client;
    this.maxAppendBytes = options.maxAppendBytes ?? 1024 * 1024 - 16 * 1024;
    if (!Number.isInteger(this.maxAppendBytes) || this.maxAppendBytes <= 0) {
      throw new EventLogConfigError('maxAppendBytes', 'a positive integer');
    }
    this.checkpointInterval = options.checkpointInterval ?? 32;
  }

  /** Builds a client from a connection string such as `esdb://localhost:2113?tls=false`. */
  static connect<E extends LogEvent = LogEvent>(
    connectionString: string,
    options: Omit<EventStoreDbEventLogOptions, 'client' | 'ownsClient'> = {},
  ): EventStoreDbEventLog<E> {
    let client: EventStoreDBClient;
    try {
      client = EventStoreDBClient.connectionString(connectionString);
    } catch (e) {
      throw new EventLogConfigError('connectionString', e instanceof Error ? e.message : String(e));
    }
    return new EventStoreDbEventLog<E>({ ...options, client, ownsClient: true });
  }

  async append(stream: string, events: readonly E[], expected: ExpectedVersion, options?: AppendOptions): Promise<AppendResult> {
    parseStreamName(stream);
    validateEvents(stream, events);
    const metadata = validMetadata(stream, options?.metadata);
    let expectedRevision: AppendExpectedRevision;
    if (expected === 'no_stream') expectedRevision = NO_STREAM;
    else if (expected === 'any') expectedRevision = ANY;
    else if (/^\d+$/.test(expected)) expectedRevision = BigInt(expected);
    else throw new InvalidAppendError(stream, `version token ${JSON.stringify(expected)} was not issued by this log`);
    const sizes = events.map((e) => Buffer.byteLength(JSON.stringify(e)));
    const size = sizes.reduce((a, b) => a + b, 0);
    if (size > this.maxAppendBytes) {
      throw new EventTooLargeError(stream, size, this.maxAppendBytes, largestEventId(events, sizes));
    }
    const data = events.map((e) =>
      // The whole event is the data, so a read returns exactly what was appended.
      // The append's metadata is each event's EventStoreDB metadata.
      jsonEvent({
        id: eventIdToUuid(e.event_id),
        type: e.type,
        data: e as unknown as Record<string, unknown>,
        ...(metadata ? { metadata } : {}),
      }),
    );
    try {
      // Newer servers answer a retry like a first write (revisions and a position), so only
      // the stream's revision before the append tells them apart.
      const before = (await this.lastEvent(stream))?.revision ?? -1n;
      const r = await this.client.appendToStream(stream, data, { expectedRevision });
      const last = r.nextExpectedRevision;
      const first = last - BigInt(events.length) + 1n;
      // A write lands after what was there; a retry answers with the original's revisions, which
      // were there already (older servers also omit the position).
      const duplicate = !r.position || first <= before;
      // The server's position is the write's, not its last event's when it holds several.
      const returned = r.position ? positionToken(r.position) : '';
      const position = !duplicate && events.length === 1 ? returned : ((await this.positionOf(stream, last)) ?? returned);
      return { version: last.toString(), position, duplicate };
    } catch (e) {
      if (e instanceof WrongExpectedVersionError) {
        const actual = typeof e.actualVersion === 'bigint' ? e.actualVersion.toString() : 'no_stream';
        throw new ConcurrencyError(stream, expected, actual, { cause: e });
      }
      if (e instanceof MaxAppendSizeExceededError) {
        throw new EventTooLargeError(stream, size, e.maxAppendSize, largestEventId(events, sizes), { cause: e });
      }
      if (isEventLogError(e)) throw e;
      throw new LogUnavailableError('append', stream, { cause: e });
    }
  }

  async read(stream: string): Promise<ReadResult<E>> {
    const { category } = parseStreamName(stream);
    const events: StoredEvent<E>[] = [];
    try {
      for await (const resolved of this.client.readStream(stream, { direction: FORWARDS, fromRevision: START })) {
        const r = resolved.event;
        if (!r) continue;
        events.push(this.toStored(stream, category, r.data, r.revision, r.position, `${stream}@${r.revision}`, r.metadata));
      }
    } catch (e) {
      if (e instanceof StreamNotFoundError) return { stream, exists: false, version: 'no_stream', events: [] };
      if (isEventLogError(e)) throw e;
      throw new LogUnavailableError('read', stream, { cause: e });
    }
    if (events.length === 0) return { stream, exists: false, version: 'no_stream', events: [] };
    return { stream, exists: true, version: events[events.length - 1].version, events };
  }

  async version(stream: string): Promise<StreamVersion | 'no_stream'> {
    parseStreamName(stream);
    try {
      const last = await this.lastEvent(stream);
      return last ? last.revision.toString() : 'no_stream';
    } catch (e) {
      throw new LogUnavailableError('version', stream, { cause: e });
    }
  }

  async head(): Promise<StartFrom> {
    try {
      for await (const resolved of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
        if (resolved.event?.position) return positionToken(resolved.event.position);
      }
      return 'start';
    } catch (e) {
      throw allStreamError('head', e);
    }
  }

  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    const matches = categoryMatcher(categories);
    const fromPosition = from === 'start' ? START : parsePositionToken(from);
    const caughtUp = deferred();
    const closed = deferred();
    let stopped = false;
    let failure: unknown;
    let subscription: AllStreamSubscription | undefined;

    // Caught up once every event that existed at start has been handled: when the handler finished
    // the last matching event found at start (the target), or when everything received before the
    // server's caught-up signal (23.10+) or before a filter checkpoint past the target was handled.
    // Both signals come ahead of the events still buffered in the client, hence the counts.
    let target: string | 'none' | undefined;
    let handledThrough: string | undefined;
    let received = 0;
    let processed = 0;
    let signalled: number | undefined;
    let checkpoint: { position: string; received: number } | undefined;
    const settle = (): void => {
      if (caughtUp.settled) return;
      if (
        target === 'none' ||
        (target !== undefined && handledThrough !== undefined && handledThrough >= target) ||
        (signalled !== undefined && processed >= signalled) ||
        (target !== undefined && checkpoint !== undefined && checkpoint.position > target && processed >= checkpoint.received)
      ) {
        caughtUp.resolve();
      }
    };
    const checkpointReached = (_s: AllStreamSubscription, p: EsdbPosition): void => {
      checkpoint = { position: positionToken(p), received };
      settle();
    };
    // A prefix filter on the server (`council-` also matches `council-run-...`), the exact
    // category checked here.
    const filter =
      categories === '*'
        ? excludeSystemEvents({ checkpointInterval: this.checkpointInterval, checkpointReached })
        : streamNameFilter({
            prefixes: categories.map((c) => `${validateCategory(c)}-`),
            checkpointInterval: this.checkpointInterval,
            checkpointReached,
          });
    const fail = (e: unknown): void => {
      if (failure === undefined) failure = e;
      stopped = true;
      void subscription?.unsubscribe().catch(() => undefined);
    };

    const run = async (): Promise<void> => {
      const sub = this.client.subscribeToAll({ fromPosition, filter });
      subscription = sub;
      // Counts what the client has queued for us, so a signal knows which events came before it.
      const push = sub.push.bind(sub);
      sub.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
        if (chunk !== null) received++;
        return push(chunk, encoding);
      };
      sub.on('caughtUp', () => {
        signalled ??= received;
        settle();
      });
      this.catchUpTarget(categories, matches, from, () => caughtUp.settled || stopped).then((t) => {
        target = t;
        settle();
      }, fail);
      try {
        for await (const resolved of sub as AsyncIterable<AllStreamResolvedEvent>) {
          if (stopped) break;
          const r = resolved.event;
          const stored = r ? this.deliverable(r, matches) : undefined;
          if (stored) {
            try {
              await handler(stored);
            } catch (error) {
              throw new HandlerFailure(error);
            }
          }
          if (r?.position) handledThrough = positionToken(r.position);
          processed++;
          settle();
        }
      } catch (e) {
        if (e instanceof HandlerFailure) throw e.error;
        if (failure !== undefined) throw failure;
        if (stopped) return;
        throw allStreamError('subscribe', e);
      }
      if (failure !== undefined) throw failure;
      // Only stop() ends a subscription: an end the server chose must not look like a clean stop.
      if (!stopped) throw new LogUnavailableError('subscribe', undefined, { cause: new Error('the server ended the subscription') });
    };

    const handle: Subscription = {
      caughtUp: caughtUp.promise,
      closed: closed.promise,
      stop: async () => {
        stopped = true;
        await subscription?.unsubscribe().catch(() => undefined);
        await closed.promise.catch(() => undefined);
      },
    };
    this.live.add(handle);
    run()
      .then(
        () => closed.resolve(),
        async (e: unknown) => {
          stopped = true;
          await subscription?.unsubscribe().catch(() => undefined);
          caughtUp.reject(e);
          closed.reject(e);
        },
      )
      .finally(() => this.live.delete(handle));
    return handle;
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((s) => s.stop()));
    if (this.options.ownsClient) await this.client.dispose();
  }

  /** The stored event for a delivered record of one of the wanted categories, else undefined. */
  private deliverable(r: AllStreamRecordedEvent, matches: (category: string) => boolean): StoredEvent<E> | undefined {
    const category = this.categoryOf(r.streamId, r.type, matches);
    if (category === undefined) return undefined;
    return this.toStored(
      r.streamId,
      category,
      r.data,
      r.revision,
      r.position,
      r.position ? positionToken(r.position) : r.streamId,
      r.metadata,
    );
  }

  private categoryOf(streamId: string, type: string, matches: (category: string) => boolean): string | undefined {
    if (streamId.startsWith('$') || type.startsWith('$')) return undefined;
    let category: string;
    try {
      category = parseStreamName(streamId).category;
    } catch (e) {
      if (e instanceof InvalidStreamNameError) return undefined; // not one of ours
      throw e;
    }
    return matches(category) ? category : undefined;
  }

  /**
   * Position of the last matching event now ('none' when there is none after `from`), read
   * backwards from the end of $all. It stops at the first match, or earlier once `enough()` (the
   * server said it caught up), so it costs the records written after the category's last event.
   */
  private async catchUpTarget(
    categories: CategoryFilter,
    matches: (category: string) => boolean,
    from: StartFrom,
    enough: () => boolean,
  ): Promise<string | 'none'> {
    if (categories !== '*' && categories.length === 0) return 'none';
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END });
    try {
      for await (const resolved of read) {
        if (enough()) return 'none';
        const r = resolved.event;
        if (!r?.position) continue;
        const token = positionToken(r.position);
        if (from !== 'start' && token <= from) return 'none';
        if (this.categoryOf(r.streamId, r.type, matches) !== undefined) return token;
      }
      return 'none';
    } catch (e) {
      throw allStreamError('subscribe', e);
    } finally {
      await read.cancel().catch(() => undefined);
    }
  }

  private async lastEvent(stream: string): Promise<{ revision: bigint; position: string } | undefined> {
    try {
      for await (const resolved of this.client.readStream(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
        if (resolved.event) {
          return {
            revision: resolved.event.revision,
            position: resolved.event.position ? positionToken(resolved.event.position) : '',
          };
        }
      }
      return undefined;
    } catch (e) {
      if (e instanceof StreamNotFoundError) return undefined;
      throw e;
    }
  }

  /** The position of the event at `revision` of `stream` (undefined if it is gone). */
  private async positionOf(stream: string, revision: bigint): Promise<string | undefined> {
    for await (const resolved of this.client.readStream(stream, { direction: FORWARDS, fromRevision: revision, maxCount: 1 })) {
      if (resolved.event?.position) return positionToken(resolved.event.position);
    }
    return undefined;
  }

  private toStored(
    stream: string,
    category: string,
    data: unknown,
    revision: bigint,
    position: EsdbPosition | undefined,
    where: string,
    rawMetadata?: unknown,
  ): StoredEvent<E> {
    const metadata = metadataOf(rawMetadata);
    if (!data || typeof data !== 'object' || typeof (data as LogEvent).event_id !== 'string') {
      throw new CorruptRecordError(where, 'data is not an event object with an event_id');
    }
    return {
      stream,
      category,
      event: data as E,
      position: position ? positionToken(position) : '',
      version: revision.toString(),
      previous: revision === 0n ? 'no_stream' : (revision - 1n).toString(),
      // Every revision is a real stream version on EventStoreDB.
      endOfCommit: true,
      ...(metadata ? { metadata } : {}),
    };
  }
}

/**
 * Reading or subscribing to $all needs read access to it, which only $admins have by default: a
 * setup fault, reported as such instead of as an outage to retry.
 */
function allStreamError(operation: string, e: unknown): unknown {
  if (isEventLogError(e)) return e;
  if (e instanceof AccessDeniedError || (e as { code?: unknown })?.code === GRPC_PERMISSION_DENIED) {
    return new EventLogConfigError(
      'credentials',
      `the EventStoreDB user needs read access to $all (${operation} was denied; by default only $admins have it)`,
    );
  }
  return new LogUnavailableError(operation, undefined, { cause: e });
}

const GRPC_PERMISSION_DENIED = 7;

class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/** Metadata this log wrote (an object of strings); anything else (none, bytes) is none. */
function metadataOf(raw: unknown): EventMetadata | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw) || raw instanceof Uint8Array) return undefined;
  const entries = Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string');
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

function positionToken(p: EsdbPosition): string {
  return `${pad(p.commit)}:${pad(p.prepare)}`;
}

function parsePositionToken(token: string): EsdbPosition {
  const m = /^(\d{20}):(\d{20})$/.exec(token);
  if (!m) throw new InvalidAppendError('(subscription)', `checkpoint ${JSON.stringify(token)} was not issued by this log`);
  return { commit: BigInt(m[1]), prepare: BigInt(m[2]) };
}
