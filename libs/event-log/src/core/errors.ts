/**
 * The closed set of event-log errors. Each has a literal `code` (stable, for the edge to map to a
 * reply) and the facts a caller needs to act on it. Infrastructure failures keep the original
 * error as `cause`.
 */

/** A stream's version as a token: what `read` returned, or that the stream does not exist yet. */
export type VersionFact = string;

export type EventLogErrorCode =
  | 'CONFLICT'
  | 'EVENT_TOO_LARGE'
  | 'LOG_UNAVAILABLE'
  | 'INVALID_STREAM_NAME'
  | 'INVALID_APPEND'
  | 'CORRUPT_RECORD'
  | 'INVALID_CONFIG'
  | 'CHECKPOINT_CONFLICT';

abstract class EventLogErrorBase extends Error {
  abstract readonly code: EventLogErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The stream's version is not the expected one: re-read, decide again, retry (bounded). */
export class ConcurrencyError extends EventLogErrorBase {
  readonly code = 'CONFLICT' as const;
  /** Same as `code`, mirroring EventStoreDB's `type` field. */
  readonly type = 'CONFLICT' as const;
  constructor(
    readonly stream: string,
    readonly expected: VersionFact,
    /** The stream's current version token, `'no_stream'`, or `'unknown'` when the server did not say. */
    readonly actual: VersionFact,
    options?: { cause?: unknown },
  ) {
    super(`append to ${stream}: expected version ${expected}, actual ${actual}`, options);
  }
}

/** One append (all its events, encoded) is over the configured limit. Never retry as is. */
export class EventTooLargeError extends EventLogErrorBase {
  readonly code = 'EVENT_TOO_LARGE' as const;
  constructor(
    readonly stream: string,
    /** Encoded size of the append in bytes, or -1 when only the server knew it. */
    readonly size: number,
    readonly limit: number,
    /** The largest event of the append, to tell the caller which one to shrink. */
    readonly eventId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `append to ${stream}: ${size >= 0 ? `${size} bytes` : 'payload'} over the limit of ${limit} bytes` +
        (eventId ? ` (largest event ${eventId})` : ''),
      options,
    );
  }
}

/** The log could not be reached or did not answer in time. Retrying later may succeed. */
export class LogUnavailableError extends EventLogErrorBase {
  readonly code = 'LOG_UNAVAILABLE' as const;
  constructor(
    readonly operation: string,
    readonly stream: string | undefined,
    options: { cause: unknown },
  ) {
    super(`event log unavailable during ${operation}${stream ? ` on ${stream}` : ''}: ${describeCause(options.cause)}`, options);
  }
}

/** Stream names are `<category>-<id>`: a caller bug, never retry. */
export class InvalidStreamNameError extends EventLogErrorBase {
  readonly code = 'INVALID_STREAM_NAME' as const;
  constructor(
    readonly stream: string,
    readonly reason: string,
  ) {
    super(`invalid stream name ${JSON.stringify(stream)}: ${reason}`);
  }
}

/** The append itself is malformed (no events, an event without id or type, a bad version token). */
export class InvalidAppendError extends EventLogErrorBase {
  readonly code = 'INVALID_APPEND' as const;
  constructor(
    readonly stream: string,
    readonly reason: string,
  ) {
    super(`invalid append to ${stream}: ${reason}`);
  }
}

/** A stored record could not be decoded: someone wrote to the log around this library. */
export class CorruptRecordError extends EventLogErrorBase {
  readonly code = 'CORRUPT_RECORD' as const;
  constructor(
    readonly where: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`corrupt record at ${where}: ${reason}`, options);
  }
}

/** An adapter's options are invalid; raised at construction, before any I/O. */
export class EventLogConfigError extends EventLogErrorBase {
  readonly code = 'INVALID_CONFIG' as const;
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`invalid event-log config ${field}: ${reason}`);
  }
}

/** Two runners of the same projection wrote its checkpoint concurrently; one must stop. */
export class CheckpointConflictError extends EventLogErrorBase {
  readonly code = 'CHECKPOINT_CONFLICT' as const;
  constructor(
    readonly projection: string,
    options?: { cause?: unknown },
  ) {
    super(`checkpoint of projection ${projection} was written by another runner`, options);
  }
}

export type EventLogError =
  | ConcurrencyError
  | EventTooLargeError
  | LogUnavailableError
  | InvalidStreamNameError
  | InvalidAppendError
  | CorruptRecordError
  | EventLogConfigError
  | CheckpointConflictError;

export function isEventLogError(e: unknown): e is EventLogError {
  return e instanceof EventLogErrorBase;
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message || cause.name;
  return String(cause);
}
