/**
 * The event-log port. Adapters: in-memory (unit tests), NATS JetStream, EventStoreDB.
 * The port is generic over the event shape; the protocol libraries define the rest of it.
 */

/** The least an event must have; schema_version, occurred_at, actor, ... belong to the protocols. */
export interface LogEvent {
  readonly event_id: string;
  readonly type: string;
}

/**
 * Opaque token for a stream's version, as returned by `read`, `version` and `append`. Pass it back
 * unchanged as `expected`. Only the adapter that issued it understands it.
 */
export type StreamVersion = string;

/** `'no_stream'`: the stream must not exist yet. `'any'`: no check. Otherwise the token last read. */
export type ExpectedVersion = 'no_stream' | 'any' | StreamVersion;

/**
 * Opaque global position (a checkpoint). Within one adapter, tokens compare in log order as plain
 * strings (fixed-width digits), so a checkpoint can be compared without asking the log.
 */
export type Position = string;

/** Where a subscription starts: the beginning, or just after a stored checkpoint. */
export type StartFrom = 'start' | Position;

/**
 * Small string pairs an appender attaches to its commit (a W3C `traceparent`, ...): kept beside
 * the events, never inside them, and handed back with every event of that commit. Keys are
 * lower-case (`[a-z][a-z0-9-]*`, up to 64 characters); values printable ASCII up to 512.
 */
export type EventMetadata = Readonly<Record<string, string>>;

export interface AppendOptions {
  readonly metadata?: EventMetadata;
}

/** `'*'` for every category, or the exact categories wanted (`council` does not match `council-run`). */
export type CategoryFilter = '*' | readonly string[];

export interface StoredEvent<E extends LogEvent = LogEvent> {
  readonly stream: string;
  readonly category: string;
  readonly event: E;
  /** Global position of this event; store it as the checkpoint once the event is applied. */
  readonly position: Position;
  /**
   * The stream's version once the commit that holds this event is applied. Events of one append
   * share it on adapters that store an append as one record (JetStream).
   */
  readonly version: StreamVersion;
  /**
   * The stream's version just before this event (`'no_stream'` for the stream's first event), or
   * undefined when the adapter cannot tell (a JetStream commit appended with `'any'`). A cache
   * folds an event only when `previous` is the version it holds, so it can never skip an event.
   * Events of one JetStream commit share it, as they share `version`.
   */
  readonly previous: StreamVersion | 'no_stream' | undefined;
  /**
   * False for every event of a multi-event commit but the last: a state folded up to such an event
   * is not at `version` yet (JetStream stores one append as one message).
   */
  readonly endOfCommit: boolean;
  /** The metadata its append carried; undefined when it carried none. */
  readonly metadata?: EventMetadata;
}

export interface AppendResult {
  /** The stream's version after this append: the next `expected`. */
  readonly version: StreamVersion;
  /** Global position of the last event of the append. */
  readonly position: Position;
  /** True when the log recognised a retry of an append it already holds and added nothing. */
  readonly duplicate: boolean;
}

export type ReadResult<E extends LogEvent = LogEvent> =
  | {
      readonly stream: string;
      readonly exists: true;
      readonly version: StreamVersion;
      readonly events: readonly StoredEvent<E>[];
    }
  | {
      readonly stream: string;
      readonly exists: false;
      /** So that `append(stream, events, (await read(stream)).version)` also creates the stream. */
      readonly version: 'no_stream';
      readonly events: readonly [];
    };

export type EventHandler<E extends LogEvent> = (event: StoredEvent<E>) => void | Promise<void>;

export interface Subscription {
  /** Resolves once every event that existed when the subscription started has been handled. */
  readonly caughtUp: Promise<void>;
  /**
   * Settles when the subscription ends: resolves after `stop()`, rejects with the handler's error
   * (the subscription stops at the first one, so the checkpoint never skips a failed event) or with
   * a LogUnavailableError.
   */
  readonly closed: Promise<void>;
  /** Stops delivery; the handler is never called again once this resolves. */
  stop(): Promise<void>;
}

export interface EventLog<E extends LogEvent = LogEvent> {
  /**
   * Appends all `events` atomically to `stream` if its version is `expected`.
   * @throws ConcurrencyError when the version differs, EventTooLargeError, InvalidAppendError,
   *   InvalidStreamNameError, LogUnavailableError.
   * A retry of an append with the same event ids adds nothing and returns the original version
   * with `duplicate: true`. `options.metadata` is stored with the commit (InvalidAppendError when
   * malformed); a duplicate keeps the first append's.
   */
  append(stream: string, events: readonly E[], expected: ExpectedVersion, options?: AppendOptions): Promise<AppendResult>;

  /** All events of one stream, in order, with its version token. */
  read(stream: string): Promise<ReadResult<E>>;

  /** The stream's current version, without reading its events (cheap freshness check). */
  version(stream: string): Promise<StreamVersion | 'no_stream'>;

  /** Position of the last event in the whole log (`'start'` when empty): subscribe from here for live-only. */
  head(): Promise<StartFrom>;

  /**
   * Delivers the events of the matching categories in one global order, strictly after `from`,
   * one at a time (the next after the handler's promise resolves), then follows live.
   */
  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription;

  /** Releases what the adapter opened (connections it owns, live subscriptions). */
  close(): Promise<void>;
}

/** Log order of two positions from the same adapter. */
export function comparePositions(a: Position, b: Position): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when `position` is at or before `checkpoint` (`'start'` is before everything). */
export function isAtOrBefore(position: Position, checkpoint: StartFrom): boolean {
  return checkpoint !== 'start' && position <= checkpoint;
}
