import { EventLogConfigError } from '../core/errors';
import { deferred } from '../core/internal';
import type { CategoryFilter, EventLog, LogEvent, StartFrom, StoredEvent, Subscription } from '../core/types';
import type { CheckpointStore } from './checkpoint-store';

export interface Projection<S, E extends LogEvent = LogEvent> {
  /** Stable name: the checkpoint's key. Change it (e.g. `audit-v2`) to rebuild after a change of `apply`. */
  readonly name: string;
  readonly categories: CategoryFilter;
  initial(): S;
  /** Pure fold; may mutate and return `state`. Never sees an event twice, nor one at or before the checkpoint. */
  apply(state: S, event: StoredEvent<E>): S;
}

export interface ProjectionRunnerOptions {
  /** Save after this many applied events. Default 100. */
  readonly saveEvery?: number;
  /** Save at most this long after the last unsaved event. Default 1000 ms. */
  readonly saveAfterMs?: number;
}

/**
 * Runs a projection from its checkpoint: loads (position, state), subscribes after the position,
 * folds every matching event, saves (position, state) together every `saveEvery` events, when the
 * subscription has caught up, after `saveAfterMs` of quiet and on stop. Events at or before the
 * stored position are skipped, so a redelivery or a restart never applies an event twice.
 */
export class ProjectionRunner<S, E extends LogEvent = LogEvent> {
  private state!: S;
  private position: StartFrom = 'start';
  private revision = 0;
  private unsaved = 0;
  private subscription: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  private failure = deferred<never>();
  private readonly saveEvery: number;
  private readonly saveAfterMs: number;

  constructor(
    private readonly log: EventLog<E>,
    private readonly projection: Projection<S, E>,
    private readonly store: CheckpointStore<S>,
    options: ProjectionRunnerOptions = {},
  ) {
    this.saveEvery = options.saveEvery ?? 100;
    this.saveAfterMs = options.saveAfterMs ?? 1_000;
    if (!Number.isInteger(this.saveEvery) || this.saveEvery < 1) throw new EventLogConfigError('saveEvery', 'a positive integer');
    if (!(this.saveAfterMs >= 0)) throw new EventLogConfigError('saveAfterMs', 'zero or more milliseconds');
  }

  /** Current state: read-only for callers. */
  get current(): { readonly state: S; readonly position: StartFrom } {
    return { state: this.state, position: this.position };
  }

  /**
   * Loads the checkpoint and starts following the log. Resolves once caught up (the state then
   * reflects every event that existed at start) and rejects if the subscription fails first.
   */
  async start(): Promise<void> {
    if (this.subscription) throw new EventLogConfigError('start', `projection ${this.projection.name} is already running`);
    const stored = await this.store.load(this.projection.name);
    this.state = stored ? stored.state : this.projection.initial();
    this.position = stored ? stored.position : 'start';
    this.revision = stored ? stored.revision : 0;
    this.failure = deferred<never>();
    const sub = this.log.subscribe(this.projection.categories, this.position, (e) => this.handle(e));
    this.subscription = sub;
    sub.closed.catch((e: unknown) => this.failure.reject(e));
    await Promise.race([sub.caughtUp, this.failure.promise]);
    await this.flush();
  }

  /** Rejects when the subscription or a save fails; the runner has stopped then. */
  get failed(): Promise<never> {
    return this.failure.promise;
  }

  /** Stops, then saves what was applied since the last save. */
  async stop(): Promise<void> {
    const sub = this.subscription;
    this.subscription = undefined;
    await sub?.stop();
    await this.flush();
  }

  /** Forgets the checkpoint and folds the whole log again from the initial state. */
  async rebuild(): Promise<void> {
    await this.stop();
    await this.saving;
    await this.store.delete(this.projection.name);
    await this.start();
  }

  /** Saves now if anything is unsaved. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.unsaved > 0) this.queueSave();
    await this.saving;
  }

  private handle(e: StoredEvent<E>): void | Promise<void> {
    // Redelivered or older than the checkpoint: already in the state.
    if (this.position !== 'start' && e.position <= this.position) return;
    this.state = this.projection.apply(this.state, e);
    this.position = e.position;
    this.unsaved++;
    if (this.unsaved >= this.saveEvery) {
      this.queueSave();
      // Backpressure: a slow store slows the fold rather than piling up saves.
      return this.saving;
    }
    if (!this.timer && this.saveAfterMs > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.queueSave();
      }, this.saveAfterMs);
      this.timer.unref();
    }
  }

  private queueSave(): void {
    // A copy taken now: `apply` may mutate the state while the save is in flight, and the stored
    // state must be exactly the one at the stored position.
    const checkpoint = { position: this.position, state: structuredClone(this.state) };
    this.unsaved = 0;
    this.saving = this.saving.then(async () => {
      try {
        this.revision = await this.store.save(this.projection.name, checkpoint, this.revision);
      } catch (e) {
        // A failed save stops the runner: continuing would drift from what is stored.
        this.failure.reject(e);
        const sub = this.subscription;
        this.subscription = undefined;
        void sub?.stop();
        throw e;
      }
    });
    // Observed through `failed`; keep Node from reporting it as unhandled.
    this.saving.catch(() => undefined);
  }
}
