import {
  ANY,
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
import { deferred, largestEventId, pad, validateEvents } from '../core/internal';
import { categoryMatcher, parseStreamName, validateCategory } from '../core/stream-name';
import type {
  AppendResult,
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

  async append(stream: string, events: readonly E[], expected: ExpectedVersion): Promise<AppendResult> {
    parseStreamName(stream);
    validateEvents(stream, events);
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
      jsonEvent({ id: eventIdToUuid(e.event_id), type: e.type, data: e as unknown as Record<string, unknown> }),
    );
    try {
      const r = await this.client.appendToStream(stream, data, { expectedRevision });
      const version = r.nextExpectedRevision.toString();
      // An idempotent write (a retry) is acknowledged without a position: nothing was written.
      if (!r.position) {
        const last = await this.lastEvent(stream);
        return { version, position: last?.position ?? '', duplicate: true };
      }
      return { version, position: positionToken(r.position), duplicate: false };
    } catch (e) {
      if (e instanceof WrongExpectedVersionError) {
        const actual = typeof e.actualVersion === 'bigint' ? e.actualVersion.toString() : 'no_stream';
        throw new ConcurrencyError(stream, expected, actual, { cause: e });
      }
      if (e instanceof MaxAppendSizeExceededError) {
        throw new EventTooLargeError(stream, size, e.maxAppendSize, largestEventId(events, sizes), { cause: e });
      }
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
        events.push(this.toStored(stream, category, r.data, r.revision, r.position, `${stream}@${r.revision}`));
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
      return last ? last.version : 'no_stream';
    } catch (e) {
      throw new LogUnavailableError('version', stream, { cause: e });
    }
  }

  async head(): Promise<StartFrom> {
    try {
      for await (const resolved of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
        if (resolved.event) return positionToken(resolved.event.position);
      }
      return 'start';
    } catch (e) {
      throw new LogUnavailableError('head', undefined, { cause: e });
    }
  }

  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    const matches = categoryMatcher(categories);
    const fromPosition = from === 'start' ? START : parsePositionToken(from);
    const caughtUp = deferred();
    const closed = deferred();
    let stopped = false;
    let subscription: AllStreamSubscription | undefined;
    // Caught up once the server says so (23.10+) or once a delivered event or a checkpoint of the
    // filtered scan reaches the head of $all as it was when we started.
    let target: string | undefined;
    const reached = (p: string): void => {
      if (target !== undefined && p >= target) caughtUp.resolve();
    };
    const checkpointReached = (_s: AllStreamSubscription, p: EsdbPosition): void => reached(positionToken(p));
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

    const run = async (): Promise<void> => {
      try {
        const head = await this.head();
        target = head;
        if (head === 'start' || (from !== 'start' && from >= head)) caughtUp.resolve();
        if (stopped) return;
        subscription = this.client.subscribeToAll({ fromPosition, filter });
        subscription.on('caughtUp', () => caughtUp.resolve());
      } catch (e) {
        if (isEventLogError(e)) throw e;
        throw new LogUnavailableError('subscribe', undefined, { cause: e });
      }
      try {
        for await (const resolved of subscription as AsyncIterable<AllStreamResolvedEvent>) {
          if (stopped) break;
          const r = resolved.event;
          if (!r || r.streamId.startsWith('$')) continue;
          let category: string;
          try {
            category = parseStreamName(r.streamId).category;
          } catch (e) {
            if (e instanceof InvalidStreamNameError) continue; // not one of ours
            throw e;
          }
          const token = positionToken(r.position);
          if (matches(category)) {
            const stored = this.toStored(r.streamId, category, r.data, r.revision, r.position, token);
            try {
              await handler(stored);
            } catch (error) {
              throw new HandlerFailure(error);
            }
          }
          reached(token);
        }
      } catch (e) {
        if (e instanceof HandlerFailure) throw e.error;
        if (stopped) return;
        if (isEventLogError(e)) throw e;
        throw new LogUnavailableError('subscribe', undefined, { cause: e });
      }
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

  private async lastEvent(stream: string): Promise<{ version: string; position: string } | undefined> {
    try {
      for await (const resolved of this.client.readStream(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
        if (resolved.event) {
          return {
            version: resolved.event.revision.toString(),
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

  private toStored(
    stream: string,
    category: string,
    data: unknown,
    revision: bigint,
    position: EsdbPosition | undefined,
    where: string,
  ): StoredEvent<E> {
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
    };
  }
}

class HandlerFailure {
  constructor(readonly error: unknown) {}
}

function positionToken(p: EsdbPosition): string {
  return `${pad(p.commit)}:${pad(p.prepare)}`;
}

function parsePositionToken(token: string): EsdbPosition {
  const m = /^(\d{20}):(\d{20})$/.exec(token);
  if (!m) throw new InvalidAppendError('(subscription)', `checkpoint ${JSON.stringify(token)} was not issued by this log`);
  return { commit: BigInt(m[1]), prepare: BigInt(m[2]) };
}
