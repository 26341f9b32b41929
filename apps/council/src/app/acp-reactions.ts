import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AcpError, PROPOSAL_STREAM_CATEGORY, ProposalEvent } from '@conclave/acp-protocol';
import {
  AcpReaction,
  AcpReactionState,
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  CouncilEvent,
  acpReactionCause,
  applyAcpReactionEvent,
  emptyAcpReactions,
  settleAcpReaction,
} from '@conclave/council-protocol';
import type { StartFrom, StoredEvent } from '@conclave/event-log';
import { ensureStream } from '@conclave/messaging';
import {
  CLOCK,
  Clock,
  COMMAND_REJECTED,
  CommandContext,
  CommandRejected,
  ConclaveMetrics,
  NATS_CONNECTION,
  Reactor,
  Reactors,
  rejectionsStream,
  SERVICE_CONFIG,
  TimerOutcome,
  TimerQueue,
  trackTimerQueue,
} from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { AcpBridge } from './acp-bridge';
import { CouncilConfig } from './council.config';
import { CouncilCommands } from './council-commands';
import { RunDriver } from './run-driver';
import { COUNCIL_RUN_CATEGORY } from './run-index';

/** Bounds of a rejection record's fields, as the audit service reads them. */
const MAX_ID = 128;
const MAX_MESSAGE = 1024;

/** ACP refusals worth another attempt; any other typed refusal is final. */
const RETRYABLE_ACP = new Set(['INTERNAL', 'RATE_LIMITED', 'CONFLICT']);

/**
 * The council service's side of ACP, as a reactor over the one log (ACP's `proposal` category
 * and the runs): it starts a run for an ACP proposal that asks for deliberation, posts the
 * decision of such a run back to ACP, and hands the human's resolution of a value-choice
 * escalation to the run as ResolveValueChoice. What is due is the pure `applyAcpReactionEvent`;
 * each reaction waits in the timer queue until it is done or refused for good, and is cleared by
 * the event that shows it done, so a restart or a second replica repeats only idempotent work.
 */
@Injectable()
export class AcpReactions implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AcpReactions.name);
  private state: AcpReactionState = emptyAcpReactions();
  private live = false;
  private readonly reactor: Reactor<ProposalEvent | CouncilEvent>;
  private readonly timers: TimerQueue;
  private rejections: Promise<void> | undefined;

  constructor(
    reactors: Reactors,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly commands: CouncilCommands,
    private readonly bridge: AcpBridge,
    private readonly driver: RunDriver,
    private readonly context: CommandContext,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    this.timers = new TimerQueue({
      name: 'council-acp',
      clock,
      maxBackoffMs: 5_000,
      run: (key) => this.react(key),
      onRetry: (key, attempt, err) => {
        if (attempt === 1 || attempt % 10 === 0)
          this.logger.warn(`${key}: attempt ${attempt} failed, retrying: ${(err as Error)?.message}`);
      },
    });
    if (metrics) trackTimerQueue(metrics, 'council-acp', this.timers);
    this.reactor = reactors.create<ProposalEvent | CouncilEvent>({
      name: 'council-acp',
      categories: [PROPOSAL_STREAM_CATEGORY, COUNCIL_RUN_CATEGORY],
      apply: (e) => this.apply(e),
      caughtUp: () => this.caughtUp(),
      snapshot: {
        schema: 1,
        take: () => this.state,
        restore: (saved) => {
          this.state = saved as AcpReactionState;
        },
      },
    });
  }

  /** Reactions waiting or being retried (tests, metrics). */
  get backlog(): number {
    return this.timers.size;
  }

  /** Where the reactor's last start resumed: `start`, or a snapshot's position. */
  get replayedFrom(): StartFrom {
    return this.reactor.resumedFrom;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
    await this.timers.stop();
  }

  private apply({ event }: StoredEvent<ProposalEvent | CouncilEvent>): void {
    const due = applyAcpReactionEvent(this.state, event);
    if (this.live) for (const r of due) this.timers.schedule(r.key, this.clock.now().getTime());
  }

  /** Once caught up (at start, after a resumed subscription): whatever the log does not show done. */
  private caughtUp(): void {
    this.live = true;
    const now = this.clock.now().getTime();
    for (const key of Object.keys(this.state.due)) this.timers.schedule(key, now);
    this.timers.start();
  }

  private async react(key: string): Promise<TimerOutcome> {
    const reaction = this.state.due[key];
    if (!reaction) return 'done';
    try {
      await this.run(reaction);
      return 'done';
    } catch (err) {
      const final = (err instanceof CouncilError && err.code !== 'INTERNAL') || (err instanceof AcpError && !RETRYABLE_ACP.has(err.code));
      if (!final) throw err;
      // Already done (a replica or an earlier attempt got there), or refused for good: audited once.
      if (!(err instanceof CouncilError && err.code === 'RUN_ALREADY_STARTED')) {
        this.logger.warn(`${key}: refused: ${(err as Error).message}`);
        await this.audit(reaction, err as CouncilError | AcpError);
      }
      settleAcpReaction(this.state, key);
      return 'done';
    }
  }

  /**
   * A refused reaction enters the audit chain as a refused command does (RFC 14.6): a
   * CommandRejected record on the rejections stream, in the name of the participant it acted for,
   * authenticated when ACP required a signature for its cause. Its id derives from the reaction,
   * so replicas and replays that refuse it again are recorded once. A failure to record is
   * retried with the reaction (the refusal stands; only the record is missing).
   */
  private async audit(reaction: AcpReaction, err: CouncilError | AcpError): Promise<void> {
    const cause = acpReactionCause(reaction);
    const id =
      cause.record_id.length <= MAX_ID ? cause.record_id : `council-acp:${createHash('sha256').update(cause.record_id).digest('hex')}`;
    const field = (err as { field?: string }).field;
    const record: CommandRejected = {
      event_id: id,
      type: COMMAND_REJECTED,
      schema_version: 1,
      occurred_at: this.clock.now().toISOString(),
      actor: cause.actor.slice(0, MAX_ID),
      causation_id: id,
      correlation_id: cause.proposal_id,
      data: {
        command: cause.command,
        subject: cause.command,
        proposal_id: cause.proposal_id.slice(0, MAX_ID),
        authenticated: this.context.authRequired,
        body_hash: null,
        error: {
          code: err.code,
          message: err.message.slice(0, MAX_MESSAGE),
          ...(typeof field === 'string' ? { field: field.slice(0, MAX_ID) } : {}),
        },
      },
    };
    const { stream, subject } = rejectionsStream(this.config);
    this.rejections ??= this.nc
      .jetstreamManager()
      .then((jsm) => ensureStream(jsm, { name: stream, subjects: [subject], replicas: this.config.logReplicas }))
      .catch((e: unknown) => {
        this.rejections = undefined;
        throw e;
      });
    await this.rejections;
    await this.nc.jetstream().publish(subject, new TextEncoder().encode(JSON.stringify(record)), { msgID: id });
  }

  private async run(r: AcpReaction): Promise<void> {
    switch (r.kind) {
      case 'start-run':
        await this.commands.startFromAcp(r);
        return;
      case 'bridge':
        await this.bridge.postForOrigin(r.run_id, r.origin_proposal_id);
        return;
      case 'resolve-value-choice':
        // The command derives from the resolution event: a replay decides the same event id, once.
        await this.driver.execute(r.run_id, (_s, now) => ({
          type: C.ResolveValueChoice,
          outcome: r.outcome,
          chosen_by: r.chosen_by,
          note: r.note,
          acp_proposal_id: r.acp_proposal_id,
          acp_event_id: r.acp_event_id,
          now,
        }));
        return;
    }
  }
}
