import { EventLogConfigError } from '../core/errors';
import { categoryMatcher } from '../core/stream-name';
import type {
  AppendResult,
  CategoryFilter,
  EventLog,
  ExpectedVersion,
  LogEvent,
  Position,
  StoredEvent,
  StreamVersion,
  Subscription,
} from '../core/types';

export interface AggregateCacheOptions<S, E extends LogEvent> {
  /** Categories whose aggregates are cached and followed, e.g. `['proposal']`. */
  readonly categories: CategoryFilter;
  /** State of an aggregate with no events. */
  initial(stream: string): S;
  /** Pure fold, as the domain's `evolve`. Must not mutate `state` (cached states are shared). */
  evolve(state: S, event: E): S;
  /** Most aggregates kept, least recently used evicted first. Default 10,000. */
  readonly maxEntries?: number;
}

/** A loaded aggregate: its folded state and the version to pass as `expected` to the next append. */
export interface LoadedAggregate<S> {
  readonly stream: string;
  readonly state: S;
  readonly version: StreamVersion | 'no_stream';
  /** Whether the state came from the cache (true) or from a full read of the stream (false). */
  readonly cached: boolean;
}

interface Entry<S> {
  state: S;
  version: StreamVersion | 'no_stream';
  /** Last folded event's position: subscription events at or before it are already in. */
  position: Position | undefined;
  /** A multi-event commit being folded from the subscription: not visible until its last event. */
  pending?: { state: S; position: Position };
}

export interface AggregateCacheStats {
  hits: number;
  misses: number;
  entries: number;
}

/**
 * Keeps the folded state of recently used aggregates, fed by a live subscription and by the
 * appends made through it. `load` asks the log for the aggregate's current version (one cheap
 * request: last message of the subject on JetStream) and trusts the cache only when it matches,
 * so a stale entry (another writer, a lagging subscription) costs one full read, never a wrong state.
 */
export class AggregateCache<S, E extends LogEvent = LogEvent> {
  private readonly entries = new Map<string, Entry<S>>();
  private readonly maxEntries: number;
  private readonly matches: (category: string) => boolean;
  private subscription: Subscription | undefined;
  readonly stats: AggregateCacheStats = { hits: 0, misses: 0, entries: 0 };

  constructor(
    private readonly log: EventLog<E>,
    private readonly options: AggregateCacheOptions<S, E>,
  ) {
    this.maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) throw new EventLogConfigError('maxEntries', 'a positive integer');
    this.matches = categoryMatcher(options.categories);
  }

  /** Follows the log from its current head. Without it the cache still works, with more full reads. */
  async start(): Promise<void> {
    if (this.subscription) return;
    const head = await this.log.head();
    this.subscription = this.log.subscribe(this.options.categories, head, (e) => this.feed(e));
    // A dead feed only makes the cache colder: load() checks freshness on every call.
    this.subscription.closed.catch(() => {
      this.subscription = undefined;
    });
    await this.subscription.caughtUp;
  }

  async stop(): Promise<void> {
    const s = this.subscription;
    this.subscription = undefined;
    await s?.stop();
  }

  /** The aggregate's state and version: from the cache when it is current, else by a full read. */
  async load(stream: string): Promise<LoadedAggregate<S>> {
    const version = await this.log.version(stream);
    const entry = this.entries.get(stream);
    if (entry && entry.version === version) {
      this.touch(stream, entry);
      this.stats.hits++;
      return { stream, state: entry.state, version, cached: true };
    }
    this.stats.misses++;
    return this.reload(stream);
  }

  /** A full read, ignoring the cache, then cached. */
  async reload(stream: string): Promise<LoadedAggregate<S>> {
    const r = await this.log.read(stream);
    let state = this.options.initial(stream);
    for (const e of r.events) state = this.options.evolve(state, e.event);
    const position = r.events.length > 0 ? r.events[r.events.length - 1].position : undefined;
    this.remember(stream, { state, version: r.version, position });
    return { stream, state, version: r.version, cached: false };
  }

  /**
   * Appends through the log, then folds the events into the cached state when the append was
   * made on top of it, so the writer's next load is a hit.
   */
  async append(stream: string, events: readonly E[], expected: ExpectedVersion): Promise<AppendResult> {
    const result = await this.log.append(stream, events, expected);
    const entry = this.entries.get(stream);
    if (!result.duplicate && entry && entry.version === expected && !entry.pending) {
      let state = entry.state;
      for (const e of events) state = this.options.evolve(state, e);
      this.remember(stream, { state, version: result.version, position: result.position });
    }
    return result;
  }

  /** Drops an aggregate from the cache. */
  evict(stream: string): void {
    this.entries.delete(stream);
    this.stats.entries = this.entries.size;
  }

  private feed(e: StoredEvent<E>): void {
    if (!this.matches(e.category)) return;
    const entry = this.entries.get(e.stream);
    // Only aggregates someone loaded are kept warm; the rest would just fill memory.
    if (!entry) return;
    const after = entry.pending?.position ?? entry.position;
    if (after !== undefined && e.position <= after) return;
    const base = entry.pending?.state ?? entry.state;
    const state = this.options.evolve(base, e.event);
    if (e.endOfCommit) {
      entry.state = state;
      entry.version = e.version;
      entry.position = e.position;
      entry.pending = undefined;
    } else {
      entry.pending = { state, position: e.position };
    }
  }

  private remember(stream: string, entry: Entry<S>): void {
    this.entries.delete(stream);
    this.entries.set(stream, entry);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    this.stats.entries = this.entries.size;
  }

  private touch(stream: string, entry: Entry<S>): void {
    // Map order is insertion order: re-inserting marks it most recently used.
    this.entries.delete(stream);
    this.entries.set(stream, entry);
  }
}
