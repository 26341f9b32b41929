import { ConcurrencyError, EventLogConfigError, EventTooLargeError, InvalidAppendError } from '../core/errors';
import { commitKey, deferred, largestEventId, pad, validateEvents, validMetadata, type Deferred } from '../core/internal';
import { categoryMatcher, parseStreamName } from '../core/stream-name';
import type {
  AppendOptions,
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

export interface InMemoryEventLogOptions {
  /** Largest encoded append (JSON, all events) in bytes; mirrors the real adapters' limit. Default 1 MiB. */
  readonly maxAppendBytes?: number;
  /**
   * What one append becomes. `'event'` (the default): each event a commit of its own, with a
   * version of its own, as on EventStoreDB. `'append'`: the append is one commit, as on
   * JetStream (one message): its events share one version and one `previous`, and only the last
   * is `endOfCommit`. Readers that fold commits are tested on both.
   */
  readonly commits?: 'event' | 'append';
}

interface StreamState<E extends LogEvent> {
  events: StoredEvent<E>[];
  /** commitKey -> result, so a retried append returns what the first one did. */
  commits: Map<string, AppendResult>;
}

/**
 * In-memory adapter for unit tests of services: same contract as the real logs, no I/O.
 * Versions are stream revisions (0-based), positions the global index.
 */
export class InMemoryEventLog<E extends LogEvent = LogEvent> implements EventLog<E> {
  readonly maxAppendBytes: number;
  private readonly commitPerAppend: boolean;
  private readonly all: StoredEvent<E>[] = [];
  private readonly streams = new Map<string, StreamState<E>>();
  private wake: Deferred<void> = deferred();
  private readonly live = new Set<Subscription>();

  constructor(options: InMemoryEventLogOptions = {}) {
    this.maxAppendBytes = options.maxAppendBytes ?? 1024 * 1024;
    this.commitPerAppend = options.commits === 'append';
    if (!Number.isInteger(this.maxAppendBytes) || this.maxAppendBytes <= 0) {
      throw new EventLogConfigError('maxAppendBytes', 'a positive integer');
    }
  }

  async append(stream: string, events: readonly E[], expected: ExpectedVersion, options?: AppendOptions): Promise<AppendResult> {
    const { category } = parseStreamName(stream);
    validateEvents(stream, events);
    const metadata = validMetadata(stream, options?.metadata);
    if (expected !== 'no_stream' && expected !== 'any' && !/^\d+$/.test(expected)) {
      throw new InvalidAppendError(stream, `version token ${JSON.stringify(expected)} was not issued by this log`);
    }
    const sizes = events.map((e) => Buffer.byteLength(JSON.stringify(e)));
    const size = sizes.reduce((a, b) => a + b, 0);
    if (size > this.maxAppendBytes) {
      throw new EventTooLargeError(stream, size, this.maxAppendBytes, largestEventId(events, sizes));
    }
    const state = this.streams.get(stream);
    const key = commitKey(events);
    const previous = state?.commits.get(key);
    // Duplicates first, like the real logs: a retry after a success is not a conflict.
    if (previous) return { ...previous, duplicate: true };
    const actual = state ? String(state.events.length - 1) : 'no_stream';
    const ok = expected === 'any' || expected === actual;
    if (!ok) throw new ConcurrencyError(stream, expected, actual);

    const s: StreamState<E> = state ?? { events: [], commits: new Map() };
    const version = String(s.events.length - 1 + events.length);
    const before = s.events.length === 0 ? 'no_stream' : String(s.events.length - 1);
    for (const [i, event] of events.entries()) {
      const last = i === events.length - 1;
      const prior = s.events.length === 0 ? 'no_stream' : String(s.events.length - 1);
      const stored: StoredEvent<E> = {
        stream,
        category,
        // A copy: a caller mutating its object later must not rewrite history.
        event: structuredClone(event),
        position: pad(this.all.length),
        // Per event, every revision is a real version, as on EventStoreDB; per append, the commit's.
        version: this.commitPerAppend ? version : String(s.events.length),
        previous: this.commitPerAppend ? before : prior,
        endOfCommit: this.commitPerAppend ? last : true,
        ...(metadata ? { metadata } : {}),
      };
      this.all.push(stored);
      s.events.push(stored);
    }
    this.streams.set(stream, s);
    const result: AppendResult = { version, position: this.all[this.all.length - 1].position, duplicate: false };
    s.commits.set(key, result);
    const w = this.wake;
    this.wake = deferred();
    w.resolve();
    return result;
  }

  async read(stream: string): Promise<ReadResult<E>> {
    parseStreamName(stream);
    const s = this.streams.get(stream);
    if (!s) return { stream, exists: false, version: 'no_stream', events: [] };
    return { stream, exists: true, version: String(s.events.length - 1), events: [...s.events] };
  }

  async version(stream: string): Promise<StreamVersion | 'no_stream'> {
    parseStreamName(stream);
    const s = this.streams.get(stream);
    return s ? String(s.events.length - 1) : 'no_stream';
  }

  async head(): Promise<StartFrom> {
    return this.all.length === 0 ? 'start' : pad(this.all.length - 1);
  }

  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    const matches = categoryMatcher(categories);
    if (from !== 'start' && !/^\d{20}$/.test(from)) {
      throw new InvalidAppendError('(subscription)', `checkpoint ${JSON.stringify(from)} was not issued by this log`);
    }
    const caughtUp = deferred();
    const closed = deferred();
    let stopped = false;
    let next = from === 'start' ? 0 : Number(from) + 1;
    const stopSignal = deferred();
    const loop = async (): Promise<void> => {
      while (!stopped) {
        // Snapshot the end first: what exists now is what "caught up" means.
        const end = this.all.length;
        while (next < end && !stopped) {
          const i = next++;
          const e = this.all[i];
          if (!matches(e.category)) continue;
          await handler(e);
        }
        if (stopped) break;
        caughtUp.resolve();
        if (next >= this.all.length) await Promise.race([this.wake.promise, stopSignal.promise]);
      }
    };
    const sub: Subscription = {
      caughtUp: caughtUp.promise,
      closed: closed.promise,
      stop: async () => {
        stopped = true;
        stopSignal.resolve();
        await closed.promise.catch(() => undefined);
      },
    };
    this.live.add(sub);
    // Start on the next tick so the caller holds the subscription before the first event.
    void Promise.resolve()
      .then(loop)
      .then(
        () => closed.resolve(),
        (e) => {
          stopped = true;
          caughtUp.reject(e);
          closed.reject(e);
        },
      )
      .finally(() => this.live.delete(sub));
    return sub;
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((s) => s.stop()));
  }

  /** Every event of the log, in order (for assertions in service tests). */
  allEvents(): readonly StoredEvent<E>[] {
    return this.all;
  }
}
