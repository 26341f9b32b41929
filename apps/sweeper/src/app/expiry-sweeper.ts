import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  AcpError,
  expiryDeadline,
  isTerminalEvent,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
} from '@conclave/acp-protocol';
import type { EventLog, StoredEvent, Subscription } from '@conclave/event-log';
import { CLOCK, Clock, EVENT_LOG, IDS, IdGenerator, ProposalStore, Readiness, SERVICE_CONFIG } from '@conclave/service-kit';
import { DeadlineQueue } from './deadline-queue';
import { SweeperConfig } from './sweeper.config';

const ACTOR = 'conclave-sweeper';
/** Re-arm at least this often, so a wall-clock jump never leaves the timer asleep for long. */
const MAX_SLEEP_MS = 60_000;
const PARALLEL_EXPIRIES = 16;

/**
 * RFC 8: keeps every pending proposal's deadline (`expires_at` + the configured grace, 15.5) in a
 * timer queue built from the log, wakes at the earliest one and issues ExpireProposal; the
 * decider applies 8.2 (expired, approved, rejected or escalated on a tie) and 7.4 (quorum first).
 * A periodic full sweep (8.3) re-issues anything overdue that a lost wake-up missed. Replicas
 * race harmlessly: the compare-and-swap append records one outcome, the loser is told the
 * proposal is no longer pending.
 */
@Injectable()
export class ExpirySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ExpirySweeper.name);
  private readonly queue = new DeadlineQueue();
  private subscription: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private armedFor: number | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private live = false;
  private stopping = false;
  private readonly inFlight = new Set<string>();

  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog,
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    @Inject(SERVICE_CONFIG) private readonly config: SweeperConfig,
    readiness: Readiness,
  ) {
    readiness.register('expiry-sweeper', () => this.live);
  }

  /** Pending proposals with a deadline (for metrics and the benchmark). */
  get pending(): number {
    return this.queue.size;
  }

  async onApplicationBootstrap(): Promise<void> {
    const sub = (this.log as EventLog<ProposalEvent>).subscribe([PROPOSAL_STREAM_CATEGORY], 'start', (e) => this.onEvent(e));
    this.subscription = sub;
    sub.closed.catch((err: Error) => this.logger.error(`proposal subscription ended: ${err.message}`));
    await sub.caughtUp;
    this.live = true;
    this.arm();
    this.sweepTimer = setInterval(() => void this.fullSweep(), this.config.sweepIntervalMs);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.live = false;
    clearTimeout(this.timer);
    clearInterval(this.sweepTimer);
    await this.subscription?.stop();
  }

  private onEvent({ event }: StoredEvent<ProposalEvent>): void {
    const id = event.data.proposal_id;
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      const deadline = expiryDeadline(event.data.expires_at, this.config.expiryGraceMs);
      if (deadline !== null) this.queue.schedule(id, Date.parse(deadline));
    }
    // An escalated proposal no longer expires: only a human moves it on (10.2).
    if (isTerminalEvent(event)) this.queue.cancel(id);
    if (this.live) this.arm();
  }

  /** One timer, set for the earliest deadline. */
  private arm(): void {
    if (this.stopping) return;
    const next = this.queue.peek();
    if (next === undefined || next === this.armedFor) return;
    clearTimeout(this.timer);
    this.armedFor = next;
    const delay = Math.min(Math.max(0, next - this.clock.now().getTime()), MAX_SLEEP_MS);
    this.timer = setTimeout(() => void this.wake(), delay);
  }

  private async wake(): Promise<void> {
    this.armedFor = undefined;
    await this.expireAll(this.queue.takeDue(this.clock.now().getTime()));
    this.arm();
  }

  private async fullSweep(): Promise<void> {
    await this.expireAll(this.queue.overdue(this.clock.now().getTime()));
  }

  private async expireAll(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length && !this.stopping; i += PARALLEL_EXPIRIES) {
      await Promise.all(ids.slice(i, i + PARALLEL_EXPIRIES).map((id) => this.expire(id)));
    }
  }

  private async expire(proposalId: string): Promise<void> {
    if (this.inFlight.has(proposalId)) return;
    this.inFlight.add(proposalId);
    try {
      await this.store.execute({
        type: PROPOSAL_COMMAND_TYPES.ExpireProposal,
        command_id: this.ids.next(),
        now: this.clock.now().toISOString(),
        actor: ACTOR,
        data: { proposal_id: proposalId },
      });
    } catch (err) {
      // PROPOSAL_NOT_PENDING: another replica, the resolver or a human got there first.
      if (err instanceof AcpError && err.code === 'PROPOSAL_NOT_PENDING') return;
      this.logger.warn(`expiring ${proposalId} failed, the full sweep will retry: ${(err as Error).message}`);
    } finally {
      this.inFlight.delete(proposalId);
    }
  }
}
