import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { CategoryFilter, EventLog, LogEvent, LogUnavailableError, StartFrom, StoredEvent, Subscription } from '@conclave/event-log';
import { Readiness } from './readiness';
import { ServiceConfig } from './service-config';
import { EVENT_LOG, FATAL, NATS_CONNECTION, SERVICE_CONFIG, SERVICE_NAME, SNAPSHOTS } from './tokens';
import { encodeSnapshot, type SnapshotStore } from './snapshot-store';
import { NatsConnection } from 'nats';
import { inLogContext } from './logging';
import { ConclaveMetrics } from './metrics';
import { categoryHeadProbe } from './metrics-event-log';
import { trackReactor } from './metrics-reactors';
import { eventTrace } from './tracing';
import { StartProgress } from './start-watch';

/** What a service does when a part of it can no longer work: exit, so it is restarted. */
export type FatalHandler = (part: string, err: unknown) => void;

export function fatalHandlerFor(config: ServiceConfig): FatalHandler {
  const logger = new Logger('Fatal');
  return (part, err) => {
    logger.fatal(`${part} cannot continue: ${(err as Error)?.message ?? String(err)}`);
    if (config.exitOnFatal === 'true') {
      process.exitCode = 70;
      // Let the log line out first; the orchestrator restarts the process.
      setTimeout(() => process.exit(70), 100).unref();
    }
  };
}

export interface ReactorDefinition<E extends LogEvent> {
  /** For logs, readiness and metrics. */
  readonly name: string;
  readonly categories: CategoryFilter;
  /** Folds one event, in log order, once. A throw is a bug or a corrupt record: fatal. */
  apply(event: StoredEvent<E>): void | Promise<void>;
  /**
   * Apply in the trace the event was recorded in (when tracing is on): for a reactor
   * whose apply starts work that belongs to that trace (a timer, an append). A read model leaves
   * it off: entering a trace context for every event in every reactor was the largest part of
   * what tracing cost.
   */
  readonly inTrace?: boolean;
  /** After every catch-up (at start and after a resumed subscription): act on what is due. */
  caughtUp?(): void | Promise<void>;
  /**
   * The reactor's state, saved with its position so that a restart resumes from there instead
   * of the start of the log. `take` returns the state as it is after the last applied event (it
   * is serialized at once); `restore` puts a saved one back before anything is applied.
   */
  readonly snapshot?: {
    /** Bump when the state's shape changes: older snapshots are then ignored. */
    readonly schema: number;
    take(): unknown;
    restore(state: unknown): void;
  };
  /**
   * True while this replica is a standby that must not follow the log (another holds the lease
   * on this reactor's work): it then counts as ready and reports no lag.
   */
  standby?(): boolean;
}

export interface SnapshotPolicy {
  readonly store: SnapshotStore;
  /** Name under which this reactor's snapshot is kept (shared by replicas). */
  readonly name: string;
  /** Save after this many events... */
  readonly everyEvents: number;
  /** ...or this long after the first unsaved one. */
  readonly everyMs: number;
  /** A snapshot not read within this long is skipped (rebuilt from the log). Default 15 s. */
  readonly loadTimeoutMs?: number;
  /** A save not acknowledged within this long is abandoned (the next one is taken later). Default 15 s. */
  readonly saveTimeoutMs?: number;
}

const FIRST_RETRY_MS = 250;
const SNAPSHOT_LOAD_TIMEOUT_MS = 15_000;
const SNAPSHOT_SAVE_TIMEOUT_MS = 15_000;
const MAX_RETRY_MS = 5_000;

/**
 * The one reactor runtime: follows the log from a position, hands each event to the reactor
 * once and in order, and keeps following through log outages by resubscribing from the last
 * event handled. It is ready only while it follows the log and has caught up; a subscription that
 * cannot be resumed (a handler failure, or an outage longer than the configured limit) is fatal.
 */
export class Reactor<E extends LogEvent> {
  private readonly logger: Logger;
  private subscription: Subscription | undefined;
  private position: StartFrom = 'start';
  private following = false;
  private stopping = false;
  private failed = false;
  /** Events handled since start: for tests and metrics. */
  handled = 0;
  /** Where the last start resumed: a snapshot's position, or the given one. */
  resumedFrom: StartFrom = 'start';
  private unsaved = 0;
  private firstUnsavedAt = 0;
  /** Bumped by each subscription: events from an earlier one are not applied. */
  private generation = 0;
  /** True while an event is applied and the position not yet moved past it. */
  private applyingNow = false;
  /** A snapshot asked for meanwhile: taken once the position has moved. */
  private snapshotDeferred = false;
  /** The last event's application, settled or not (never rejects). */
  private applying: Promise<void> = Promise.resolve();
  /** The save in flight, if any: at most one at a time. */
  private saving: Promise<void> | undefined;

  constructor(
    private readonly log: EventLog<E>,
    private readonly definition: ReactorDefinition<E>,
    private readonly fatal: FatalHandler,
    private readonly giveUpMs: number,
    readiness?: Readiness,
    private readonly snapshots?: SnapshotPolicy,
  ) {
    this.logger = new Logger(`Reactor:${definition.name}`);
    readiness?.register(`reactor:${definition.name}`, () => (this.isStandby || this.following) && !this.failed);
  }

  /** The position of the last event handled. */
  get checkpoint(): StartFrom {
    return this.position;
  }

  get isFollowing(): boolean {
    return this.following;
  }

  /** A standby replica's reactor (see `ReactorDefinition.standby`): not following, by design. */
  get isStandby(): boolean {
    return this.definition.standby?.() ?? false;
  }

  /**
   * Restores the latest snapshot (when the reactor keeps one and it is further along than
   * `from`), subscribes after that position and resolves once caught up (or rejects if that
   * first attempt fails).
   */
  async start(from: StartFrom = 'start'): Promise<void> {
    this.position = from;
    this.stopping = false;
    const snap = this.definition.snapshot;
    if (snap && this.snapshots) {
      // A snapshot only saves time: one that cannot be read promptly is skipped, never waited for.
      let timer: NodeJS.Timeout | undefined;
      const limit = this.snapshots.loadTimeoutMs ?? SNAPSHOT_LOAD_TIMEOUT_MS;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`not read within ${limit} ms`)), limit);
      });
      const saved = await Promise.race([this.snapshots.store.load(this.snapshots.name), timeout])
        .catch((err: Error) => {
          this.logger.warn(`snapshot not loaded, rebuilding from ${from}: ${err.message}`);
          return undefined;
        })
        .finally(() => clearTimeout(timer));
      if (saved && saved.schema === snap.schema && (from === 'start' || saved.position > from)) {
        snap.restore(saved.state);
        this.position = saved.position;
      }
    }
    this.resumedFrom = this.position;
    await this.followAtStart();
    this.saveSnapshot();
    await this.saving;
  }

  /**
   * The first catch-up, retried like a resumed subscription: a read timing out while a big
   * backlog is caught up on a loaded server is no reason to fail the start. Given up after the
   * same limit, or at once for anything but an unavailable log.
   */
  private async followAtStart(): Promise<void> {
    const since = Date.now();
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(MAX_RETRY_MS, delay * 2)) {
      try {
        return await this.follow();
      } catch (err) {
        if (this.stopping || !(err instanceof LogUnavailableError) || Date.now() - since > this.giveUpMs) throw err;
        this.logger.warn(`catch-up failed (${err.message}); again after ${this.position} in ${delay} ms`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.following = false;
    const s = this.subscription;
    this.subscription = undefined;
    await s?.stop();
    await this.saving;
    if (!this.failed) {
      this.saveSnapshot();
      await this.saving;
    }
  }

  /**
   * Takes (position, state) now, if anything was applied since the last save and no save is in
   * flight, and saves it in the background. Applying events never waits for the snapshot store,
   * whose saves go through a stream that may be electing a leader: a save that did not answer
   * would stop the reactor for good. A save in flight defers the next one, so a slow store
   * never piles snapshots up; one not acknowledged in time is abandoned. Whichever snapshot was
   * saved last is a valid place to resume from, so an abandoned one landing late does no harm.
   */
  private saveSnapshot(): void {
    const snap = this.definition.snapshot;
    if (this.applyingNow) return void (this.snapshotDeferred = true);
    if (!snap || !this.snapshots || this.position === 'start' || this.unsaved === 0 || this.saving) return;
    const position = this.position;
    const encoded = encodeSnapshot({ position, schema: snap.schema, state: snap.take() });
    this.unsaved = 0;
    const store = this.snapshots;
    const limit = store.saveTimeoutMs ?? SNAPSHOT_SAVE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not acknowledged within ${limit} ms`)), limit);
    });
    this.saving = Promise.race([store.store.save(store.name, encoded), timeout])
      .catch((err: Error) => this.logger.warn(`snapshot at ${position} not saved: ${err.message}`))
      .finally(() => {
        clearTimeout(timer);
        this.saving = undefined;
      });
  }

  /** Applies one event, then moves the position past it (and takes a snapshot when one is due). */
  private async handle(e: StoredEvent<E>): Promise<void> {
    // Lines logged while applying name the reactor, the proposal and the command behind the event.
    // With tracing on, in the trace the event was recorded in: what the reactor does about it joins that trace.
    const trace = this.definition.inTrace ? eventTrace(e.metadata) : undefined;
    // Between the apply and the position's move, the state is ahead of the position: no snapshot
    // may be taken then (one taken at start or stop would otherwise pair them wrongly, and every
    // replica restoring it would apply that event twice).
    this.applyingNow = true;
    try {
      await inLogContext({ reactor: this.definition.name, ...eventIds(e) }, () => this.definition.apply(e), trace);
      this.position = e.position;
    } finally {
      this.applyingNow = false;
    }
    this.handled++;
    if (this.snapshotDeferred) {
      this.snapshotDeferred = false;
      this.saveSnapshot();
    }
    if (this.snapshots && this.definition.snapshot) {
      if (this.unsaved++ === 0) this.firstUnsavedAt = Date.now();
      // Taken between two events, so the state is exactly the one at `position`.
      if (this.unsaved >= this.snapshots.everyEvents || Date.now() - this.firstUnsavedAt >= this.snapshots.everyMs) this.saveSnapshot();
    }
  }

  private async follow(): Promise<void> {
    // An ended subscription's handler may still be running: the next one starts after it, from
    // the position it leaves, or its event would be applied twice. What an ended subscription
    // delivers after that is not applied: the new one delivers it.
    const generation = ++this.generation;
    await this.applying;
    const sub = this.log.subscribe(this.definition.categories, this.position, (e) => {
      if (generation !== this.generation) return Promise.resolve();
      const applied = this.handle(e);
      this.applying = applied.catch(() => undefined);
      return applied;
    });
    this.subscription = sub;
    // Until caught up, a failure is the caller's (start, or the resume loop); after, it is ours.
    let caughtUp = false;
    sub.closed.then(
      () => {
        // A stop we did not ask for is an end of the subscription all the same.
        if (caughtUp && !this.stopping && this.subscription === sub) {
          this.resume(new LogUnavailableError('subscribe', undefined, { cause: new Error('the subscription ended') }));
        }
      },
      (err: unknown) => {
        if (caughtUp && this.subscription === sub) this.resume(err);
      },
    );
    try {
      await sub.caughtUp;
    } catch (err) {
      if (this.subscription === sub) this.subscription = undefined;
      throw err;
    }
    caughtUp = true;
    if (this.subscription !== sub || this.stopping) return;
    await this.definition.caughtUp?.();
    this.following = true;
  }

  private resume(err: unknown): void {
    this.following = false;
    // An ended subscription is stopped all the same, in case its log still delivers on it.
    void this.subscription?.stop().catch(() => undefined);
    this.subscription = undefined;
    if (this.stopping) return;
    if (!(err instanceof LogUnavailableError)) {
      this.failed = true;
      this.fatal(`reactor ${this.definition.name}`, err);
      return;
    }
    this.logger.warn(`subscription lost (${err.message}); resuming after ${this.position}`);
    const since = Date.now();
    const attempt = async (delay: number): Promise<void> => {
      await new Promise((r) => setTimeout(r, delay));
      if (this.stopping) return;
      try {
        await this.follow();
        this.logger.log(`subscription resumed after ${this.position}`);
      } catch (e) {
        if (this.stopping) return;
        if (!(e instanceof LogUnavailableError) || Date.now() - since > this.giveUpMs) {
          this.failed = true;
          this.fatal(`reactor ${this.definition.name}`, e);
          return;
        }
        await attempt(Math.min(MAX_RETRY_MS, delay * 2));
      }
    };
    void attempt(FIRST_RETRY_MS);
  }
}

function eventIds(e: StoredEvent<LogEvent>): { proposal_id?: string; run_id?: string; command_id?: string } {
  const event = e.event as LogEvent & { causation_id?: unknown; data?: { proposal_id?: unknown; run_id?: unknown } };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { proposal_id: str(event.data?.proposal_id), run_id: str(event.data?.run_id), command_id: str(event.causation_id) };
}

/** Makes reactors with the service's log, readiness and fatal handler (and their metrics). */
@Injectable()
export class Reactors {
  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog,
    @Inject(FATAL) private readonly fatal: FatalHandler,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(SERVICE_NAME) private readonly service: string,
    @Inject(SNAPSHOTS) private readonly snapshots: SnapshotStore,
    private readonly readiness: Readiness,
    @Optional() private readonly metrics?: ConclaveMetrics,
    @Optional() @Inject(NATS_CONNECTION) private readonly nc?: NatsConnection,
    @Optional() private readonly progress?: StartProgress,
  ) {}

  private readonly headOf = () => (this.probe ??= categoryHeadProbe(this.config, this.nc));
  private probe: ReturnType<typeof categoryHeadProbe>;

  create<E extends LogEvent>(definition: ReactorDefinition<E>): Reactor<E> {
    const policy = {
      store: this.snapshots,
      name: `${this.service}-${definition.name}`,
      everyEvents: this.config.snapshotEveryEvents,
      everyMs: this.config.snapshotEveryMs,
    };
    const progress = this.progress;
    const reactor = new Reactor(
      this.log as unknown as EventLog<E>,
      progress
        ? {
            ...definition,
            apply: (e) => {
              progress.tick();
              return definition.apply(e);
            },
          }
        : definition,
      this.fatal,
      this.config.resubscribeGiveUpMs,
      this.readiness,
      policy,
    );
    if (this.metrics) trackReactor(this.metrics, definition.name, definition.categories, reactor, this.headOf());
    return reactor;
  }
}
