import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  AcpError,
  expiryDeadlineMs,
  isTerminalEvent,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  reactionCommandId,
} from '@conclave/acp-protocol';
import type { StoredEvent } from '@conclave/event-log';
import {
  CLOCK,
  Clock,
  ConclaveMetrics,
  ProposalStore,
  Reactor,
  Reactors,
  SERVICE_CONFIG,
  TimerOutcome,
  TimerQueue,
  trackTimerQueue,
} from '@conclave/service-kit';
import { SweeperConfig } from './sweeper.config';

const ACTOR = 'conclave-sweeper';
/** The sweeper's slot among the reactions derived from one id (the resolver uses the low ones). */
const EXPIRE_SLOT = 1000;

/**
 * RFC 8: a reactor that keeps every pending proposal's deadline (`expires_at` + the configured
 * grace, 15.5, rounded up to the millisecond) in the timer queue and issues ExpireProposal when
 * it comes; the decider applies 8.2 (expired, approved, rejected or escalated on a tie) and 7.4
 * (quorum first). A failed attempt (a conflict, a log outage) stays in the queue and is retried
 * with backoff until it is recorded or refused (8.3: the proposal is always expired). The
 * command id derives from the proposal id, so replicas racing on a deadline append it once.
 */
@Injectable()
export class ExpirySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ExpirySweeper.name);
  private readonly timers: TimerQueue;
  private readonly reactor: Reactor<ProposalEvent>;

  constructor(
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: SweeperConfig,
    reactors: Reactors,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    this.timers = new TimerQueue({
      clock,
      parallel: 16,
      maxSleepMs: config.sweepIntervalMs,
      run: (id) => this.expire(id),
      onRetry: (id, attempt, err) => {
        if (attempt === 1 || attempt % 10 === 0)
          this.logger.warn(`expiring ${id}: attempt ${attempt} failed, retrying: ${(err as Error)?.message}`);
      },
    });
    this.reactor = reactors.create<ProposalEvent>({
      name: 'sweeper',
      categories: [PROPOSAL_STREAM_CATEGORY],
      // What it schedules (an expiry, a resolution) continues the trace of the event behind it.
      inTrace: true,
      apply: (e) => this.apply(e),
      caughtUp: () => this.timers.start(),
      snapshot: {
        schema: 1,
        take: () => this.timers.entries(),
        restore: (entries) => {
          for (const [id, at] of entries as [string, number][]) this.timers.schedule(id, at);
        },
      },
    });
    if (metrics) trackTimerQueue(metrics, 'sweeper', this.timers);
  }

  /** Pending proposals with a deadline, including those being retried (for metrics and the benchmark). */
  get pending(): number {
    return this.timers.size;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
    await this.timers.stop();
  }

  private apply({ event }: StoredEvent<ProposalEvent>): void {
    const id = event.data.proposal_id;
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      const deadline = expiryDeadlineMs(event.data.expires_at, this.config.expiryGraceMs);
      if (deadline !== undefined) this.timers.schedule(id, deadline);
    }
    // An escalated proposal no longer expires: only a human moves it on (10.2).
    if (isTerminalEvent(event)) this.timers.cancel(id);
  }

  private async expire(proposalId: string): Promise<TimerOutcome> {
    try {
      await this.store.execute({
        type: PROPOSAL_COMMAND_TYPES.ExpireProposal,
        command_id: reactionCommandId(proposalId, EXPIRE_SLOT),
        now: this.clock.now().toISOString(),
        actor: ACTOR,
        data: { proposal_id: proposalId },
      });
      return 'done';
    } catch (err) {
      // Another replica, the resolver or a human got there first.
      if (err instanceof AcpError && (err.code === 'PROPOSAL_NOT_PENDING' || err.code === 'PROPOSAL_NOT_FOUND')) return 'done';
      throw err;
    }
  }
}
