import { Inject, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  CategoryFilter,
  CheckpointConflictError,
  CheckpointStore,
  EventLog,
  LogEvent,
  StartFrom,
  StoredEvent,
  Subscription,
} from '@conclave/event-log';
import { publishJsonOnce } from '@conclave/messaging';
import { headers as natsHeaders, JetStreamClient, NatsConnection } from 'nats';
import { Readiness } from './readiness';
import { ConclaveMetrics, METRICS, type Increment, type Observe } from './metrics';
import { contextOfEvent, producerSpan, tracingOn } from './tracing';
import { StartProgress } from './start-watch';

/** One JetStream message an outbox derives from a log event. */
export interface OutboxMessage {
  subject: string;
  body: unknown;
  /** `Nats-Msg-Id`: the log event's id, so a republish is dropped by JetStream. */
  msgId: string;
}

const encoder = new TextEncoder();
const SAVE_EVERY = 50;
const SAVE_AFTER_MS = 200;
const MAX_IN_FLIGHT = 512;
const RESTART_AFTER_MS = 1_000;

/**
 * Publishing from the log (a transactional outbox without a second store): follows the log from
 * a checkpoint, turns each event into JetStream messages (`messagesFor`), publishes them
 * pipelined in log order with `Nats-Msg-Id` = the event id, and saves the position only once
 * every publish before it is acknowledged. A crash or a failed publish resumes from the last
 * save; JetStream drops what was already published (duplicate window). Replicas share one
 * checkpoint (compare-and-set; the later position wins), so a new replica starts near the head.
 */
export abstract class LogOutbox<E extends LogEvent> implements OnApplicationBootstrap, OnApplicationShutdown {
  protected readonly logger = new Logger(this.constructor.name);
  private subscription: Subscription | undefined;
  private position: StartFrom = 'start';
  private revision = 0;
  private unsaved = 0;
  private timer: NodeJS.Timeout | undefined;
  private caughtUp = false;
  private stopping = false;
  /** Bumped by each restart: failures reported by an older subscription are already handled. */
  private generation = 0;
  /** Publishes awaiting their acknowledgement; the checkpoint never passes an unacknowledged one. */
  private inFlight: Promise<unknown>[] = [];
  /** Set by Nest after construction (subclasses keep their constructors). */
  @Optional() @Inject(ConclaveMetrics) private readonly metrics?: ConclaveMetrics;
  @Optional() @Inject(StartProgress) private readonly progress?: StartProgress;
  private meters:
    | {
        latency: Observe;
        published: Increment;
        restarts: ReturnType<ConclaveMetrics['counter']>;
      }
    | undefined;

  protected constructor(
    private readonly outbox: { checkpoint: string; categories: CategoryFilter },
    private readonly log: EventLog,
    private readonly checkpoints: CheckpointStore<null>,
    protected readonly nc: NatsConnection,
    readiness: Readiness,
  ) {
    readiness.register(outbox.checkpoint, () => this.caughtUp);
  }

  /** Creates the streams the messages go to (idempotent, at every start). */
  protected abstract prepare(): Promise<void>;

  /** The messages one log event gives (none for most). */
  protected abstract messagesFor(event: StoredEvent<E>): Promise<OutboxMessage[]>;

  async onApplicationBootstrap(): Promise<void> {
    if (this.metrics?.enabled) {
      this.meters = {
        latency: this.metrics.observer(METRICS.outboxPublishDuration, { outbox: this.outbox.checkpoint }),
        published: this.metrics.increment(METRICS.outboxPublished, { outbox: this.outbox.checkpoint }),
        restarts: this.metrics.counter(METRICS.outboxRestarts),
      };
      this.metrics.observe(METRICS.outboxPending, { outbox: this.outbox.checkpoint }, () => this.inFlight.length);
    }
    await this.prepare();
    const stored = await this.checkpoints.load(this.outbox.checkpoint);
    this.position = stored?.position ?? 'start';
    this.revision = stored?.revision ?? 0;
    try {
      await this.follow();
      await this.save();
      this.caughtUp = true;
    } catch (err) {
      // A publish not acknowledged or a read timing out while catching up a big backlog is no
      // reason to fail the start: the restart loop (which the failed subscription already began)
      // resumes from the checkpoint, and the outbox is not ready until it has caught up.
      this.logger.warn(`${this.outbox.checkpoint} did not catch up at start (${(err as Error).message}); resuming`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.subscription?.stop();
    clearTimeout(this.timer);
    await this.save().catch((err: Error) => this.logger.warn(`final checkpoint not saved: ${err.message}`));
  }

  private async follow(): Promise<void> {
    const generation = this.generation;
    const sub = (this.log as EventLog<E>).subscribe(this.outbox.categories, this.position, (e) => {
      this.progress?.tick();
      return this.publish(e);
    });
    this.subscription = sub;
    sub.closed.catch((err: Error) => this.restart(err, generation));
    await sub.caughtUp;
  }

  private async publish(event: StoredEvent<E>): Promise<void> {
    const js = this.nc.jetstream();
    for (const m of await this.messagesFor(event)) this.inFlight.push(this.measured(this.send(js, m, event)));
    this.position = event.position;
    if (++this.unsaved >= SAVE_EVERY || this.inFlight.length >= MAX_IN_FLIGHT) await this.save();
    else {
      const generation = this.generation;
      this.timer ??= setTimeout(() => void this.save().catch((err: Error) => this.restart(err, generation)), SAVE_AFTER_MS);
    }
  }

  /**
   * With tracing on, each message carries the traceparent of its publish span, which continues
   * the trace the event was recorded in (its metadata) when there is one.
   */
  private send(js: JetStreamClient, m: OutboxMessage, event: StoredEvent<E>): Promise<unknown> {
    if (!tracingOn()) return publishJsonOnce(js, m.subject, m.body, m.msgId);
    const attributes = { 'messaging.system': 'nats', 'messaging.destination.name': m.subject, 'messaging.message.id': m.msgId };
    return producerSpan(
      `publish ${this.outbox.checkpoint}`,
      attributes,
      (carrier) => {
        const h = natsHeaders();
        for (const [k, v] of Object.entries(carrier)) h.append(k, v);
        return js.publish(m.subject, encoder.encode(JSON.stringify(m.body)), { msgID: m.msgId, headers: h });
      },
      contextOfEvent(event.metadata),
    );
  }

  private measured<T>(ack: Promise<T>): Promise<T> {
    const meters = this.meters;
    if (!meters) return ack;
    const started = performance.now();
    void ack.then(
      () => {
        meters.latency((performance.now() - started) / 1000);
        meters.published();
      },
      () => undefined,
    );
    return ack;
  }

  /**
   * After a failed publish or subscription: resume from the last saved checkpoint. One failure
   * is often reported twice (a subscription that fails while catching up rejects both its
   * catch-up and its end): only the first report from the current generation restarts, or the
   * restart loops would double at every failure.
   */
  private restart(err: Error, generation: number): void {
    if (this.stopping || generation !== this.generation) return;
    this.generation++;
    const next = this.generation;
    this.meters?.restarts.inc({ outbox: this.outbox.checkpoint });
    this.logger.error(`${this.outbox.checkpoint} restarting from its checkpoint: ${err.message}`);
    const old = this.subscription;
    this.subscription = undefined;
    // Dropped, not awaited: their failures are this restart's; unhandled, one would end the process.
    for (const ack of this.inFlight) ack.catch(() => undefined);
    this.inFlight = [];
    this.unsaved = 0;
    void (async () => {
      await old?.stop().catch(() => undefined);
      const stored = await this.checkpoints.load(this.outbox.checkpoint).catch(() => undefined);
      this.position = stored?.position ?? 'start';
      this.revision = stored?.revision ?? 0;
      await new Promise((r) => setTimeout(r, RESTART_AFTER_MS));
      if (this.stopping) return;
      await this.follow();
      this.caughtUp = true;
    })().catch((e: Error) => this.restart(e, next));
  }

  private async save(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const acks = this.inFlight;
    this.inFlight = [];
    const position = this.position;
    try {
      await Promise.all(acks);
    } catch (err) {
      throw new Error(`publish not acknowledged; resuming from the checkpoint: ${(err as Error).message}`);
    }
    if (this.unsaved === 0 && this.revision > 0) return;
    this.unsaved = 0;
    const name = this.outbox.checkpoint;
    try {
      this.revision = await this.checkpoints.save(name, { position, state: null }, this.revision);
    } catch (err) {
      if (!(err instanceof CheckpointConflictError)) {
        this.logger.warn(`${name} checkpoint not saved: ${(err as Error).message}`);
        return;
      }
      // Another replica saved meanwhile: keep the later position.
      const stored = await this.checkpoints.load(name);
      this.revision = stored?.revision ?? 0;
      if (stored && stored.position !== 'start' && position !== 'start' && stored.position >= position) return;
      this.revision = await this.checkpoints.save(name, { position, state: null }, this.revision).catch(() => this.revision);
    }
  }
}
