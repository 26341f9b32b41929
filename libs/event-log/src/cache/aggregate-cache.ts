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
  /** Whether the state came from the cache (true) or from a read of the stream (false). */
  readonly cached: boolean;
}

/** How fresh a load must be. */
export interface LoadOptions {
  /**
   * `'log'` (default) asks the log for the stream's version first (one cheap request) and trusts
   * the cache only when it matches: what a query answers with. `'cache'` trusts a cached entry as
   * it is: for a writer, whose append with the entry's version fails on a stale entry anyway.
   */
  readonly freshness?: 'log' | 'cache';
}

interface Entry<S> {
  state: S;
  version: StreamVersion | 'no_stream';
  /** Last folded event's position: events at or before it are already in. */
  position: Position | undefined;
  /** A multi-event commit being folded from the subscription: not visible until its last event. */
  pending?: { state: S; version: StreamVersion; position: Position };
  /** Own appends folded before the subscription delivered them (see `forks`). */
  ahead?: OwnAppend[];
}

/** An append folded by its writer: it follows what was at `from`, ends at `to`, and wrote the events `ids`. */
interface OwnAppend {
  from: Position | undefined;
  to: Position;
  ids: readonly string[];
}

/** Own appends an entry remembers until the subscription passes them; older ones are dropped. */
const MAX_AHEAD = 16;

export interface AggregateCacheStats {
  hits: number;
  misses: number;
  /** Entries dropped because an event did not continue from the cached version. */
  gaps: number;
  entries: number;
}

/**
 * Keeps the folded state of recently used aggregates, fed by a live subscription and by the
 * appends made through it. An entry is only ever extended by an event whose `previous` is the
 * version the entry holds; anything else (a gap, an unknown predecessor) evicts it, so an entry
 * may lag the log but never holds a state that skipped an event. A read started while the
 * subscription delivers events of the same stream catches up on those events before it is
 * stored, and never replaces an entry that is further along.
 */
export class AggregateCache<S, E extends LogEvent = LogEvent> {
  private readonly entries = new Map<string, Entry<S>>();
  /** Streams being read: events the subscription delivers meanwhile, to apply after the read. */
  private readonly reading = new Map<string, StoredEvent<E>[][]>();
  private readonly maxEntries: number;
  private readonly matches: (category: string) => boolean;
  private subscription: Subscription | undefined;
  private stopped = false;
  readonly stats: AggregateCacheStats = { hits: 0, misses: 0, gaps: 0, entries: 0 };

  constructor(
    private readonly log: EventLog<E>,
    private readonly options: AggregateCacheOptions<S, E>,
  ) {
    this.maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) throw new EventLogConfigError('maxEntries', 'a positive integer');
    this.matches = categoryMatcher(options.categories);
  }

  /**
   * Follows the log from its current head; resolves once caught up. When the feed dies (a log
   * outage) every entry is forgotten, loads go to the log, and the feed is started again from
   * the head after a pause, until `stop()`.
   */
  async start(): Promise<void> {
    if (this.subscription) return;
    this.stopped = false;
    const head = await this.log.head();
    const sub = this.log.subscribe(this.options.categories, head, (e) => this.feed(e));
    this.subscription = sub;
    sub.closed.then(
      () => {
        if (this.subscription === sub && !this.stopped) this.restart();
      },
      () => {
        if (this.subscription === sub) this.restart();
      },
    );
    await sub.caughtUp;
  }

  /**
   * One failure is often reported twice (a feed that fails while catching up rejects both its
   * catch-up and its end): while a restart is pending, another report adds none.
   */
  private restart(): void {
    this.subscription = undefined;
    this.clear();
    if (this.stopped || this.restartPending) return;
    this.restartPending = true;
    const delay = this.restartDelay;
    this.restartDelay = Math.min(5_000, delay * 2);
    setTimeout(() => {
      this.restartPending = false;
      if (this.stopped || this.subscription) return;
      this.start().then(
        () => (this.restartDelay = 250),
        () => this.restart(),
      );
    }, delay).unref();
  }
  private restartPending = false;
  private restartDelay = 250;

  /** Whether the feed is live: the owner restarts it (start again) when it is not. */
  get following(): boolean {
    return this.subscription !== undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const s = this.subscription;
    this.subscription = undefined;
    await s?.stop();
  }

  /** The aggregate's state and version, from the cache when allowed (see LoadOptions), else read. */
  async load(stream: string, options: LoadOptions = {}): Promise<LoadedAggregate<S>> {
    const entry = this.entries.get(stream);
    // A cached 'no_stream' is never trusted as is: "not found" would be a rejection on old news.
    if (entry && options.freshness === 'cache' && this.subscription && entry.version !== 'no_stream') {
      this.touch(stream, entry);
      this.stats.hits++;
      return { stream, state: entry.state, version: entry.version, cached: true };
    }
    if (entry) {
      const version = await this.log.version(stream);
      const current = this.entries.get(stream);
      if (current && current.version === version) {
        this.touch(stream, current);
        this.stats.hits++;
        return { stream, state: current.state, version, cached: true };
      }
    }
    this.stats.misses++;
    return this.reload(stream);
  }

  /** Whether `loaded` is still the stream's version in the log (one cheap request). */
  async isCurrent(loaded: LoadedAggregate<S>): Promise<boolean> {
    return (await this.log.version(loaded.stream)) === loaded.version;
  }

  /** A read of the stream, ignoring the cache, then cached unless a newer entry is there. */
  async reload(stream: string): Promise<LoadedAggregate<S>> {
    const buffer: StoredEvent<E>[] = [];
    const buffers = this.reading.get(stream) ?? [];
    buffers.push(buffer);
    this.reading.set(stream, buffers);
    let r;
    try {
      r = await this.log.read(stream);
    } finally {
      buffers.splice(buffers.indexOf(buffer), 1);
      if (buffers.length === 0) this.reading.delete(stream);
    }
    const read: Entry<S> = { state: this.options.initial(stream), version: r.version, position: undefined };
    for (const e of r.events) {
      read.state = this.options.evolve(read.state, e.event);
      read.position = e.position;
    }
    const result = { stream, state: read.state, version: read.version, cached: false };
    // Events the subscription delivered during the read, past what the read returned.
    let continuous = true;
    for (const e of buffer) continuous &&= this.extend(read, e) !== 'gap';
    const existing = this.entries.get(stream);
    if (existing && existing.position !== undefined && (read.position === undefined || existing.position >= read.position)) {
      // The cache is already at or past this read: keep it.
      return result;
    }
    if (continuous && !read.pending) this.remember(stream, read);
    else this.evict(stream);
    return result;
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
      const ahead = [...(entry.ahead ?? []), { from: entry.position, to: result.position, ids: events.map((e) => e.event_id) }].slice(
        -MAX_AHEAD,
      );
      this.remember(stream, { state, version: result.version, position: result.position, ahead });
    }
    return result;
  }

  /** Drops an aggregate from the cache. */
  evict(stream: string): void {
    this.entries.delete(stream);
    this.stats.entries = this.entries.size;
  }

  /** Drops every aggregate. */
  clear(): void {
    this.entries.clear();
    this.stats.entries = 0;
  }

  /** The subscription's handler; public so that tests can feed events in any interleaving. */
  feed(e: StoredEvent<E>): void {
    if (!this.matches(e.category)) return;
    for (const buffer of this.reading.get(e.stream) ?? []) buffer.push(e);
    const entry = this.entries.get(e.stream);
    // Only aggregates someone loaded are kept warm; the rest would just fill memory.
    if (!entry) return;
    if (this.extend(entry, e) === 'gap') {
      this.stats.gaps++;
      this.evict(e.stream);
    }
  }

  /** Folds `e` into `entry` when it continues it; `'gap'` when it does not. */
  private extend(entry: Entry<S>, e: StoredEvent<E>): 'applied' | 'known' | 'gap' {
    if (entry.ahead && this.forks(entry, entry.ahead, e)) return 'gap';
    const at = entry.pending?.position ?? entry.position;
    if (at !== undefined && e.position <= at) return 'known';
    let base: S;
    if (entry.pending) {
      // The rest of a commit already begun: same commit, same version.
      if (e.version !== entry.pending.version) return 'gap';
      base = entry.pending.state;
    } else {
      if (e.previous === undefined || e.previous !== entry.version) return 'gap';
      base = entry.state;
    }
    const state = this.options.evolve(base, e.event);
    if (e.endOfCommit) {
      entry.state = state;
      entry.version = e.version;
      entry.position = e.position;
      entry.pending = undefined;
    } else {
      entry.pending = { state, version: e.version, position: e.position };
    }
    return 'applied';
  }

  /**
   * Whether `e` lies between where one of the entry's own appends expected the stream to be and
   * where that append landed: the log let the append in although another commit came first (a
   * stale expected version admitted, as a clustered JetStream can during a leader election). The
   * entry folded that append without the other commit, so it must go; a read folds both. Own
   * appends the subscription has passed are forgotten.
   */
  private forks(entry: Entry<S>, ahead: OwnAppend[], e: StoredEvent<E>): boolean {
    const between = (a: OwnAppend) => (a.from === undefined || e.position > a.from) && e.position < a.to;
    if (ahead.some((a) => between(a) && !a.ids.includes(e.event.event_id))) return true;
    const left = ahead.filter((a) => a.to > e.position);
    entry.ahead = left.length ? left : undefined;
    return false;
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
