import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AcpError, PROPOSAL_STREAM_CATEGORY, ProposalEvent } from '@conclave/acp-protocol';
import {
  AcpReaction,
  AcpReactionState,
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  CouncilEvent,
  applyAcpReactionEvent,
  emptyAcpReactions,
  settleAcpReaction,
} from '@conclave/council-protocol';
import type { StartFrom, StoredEvent } from '@conclave/event-log';
import { CLOCK, Clock, ConclaveMetrics, Reactor, Reactors, TimerOutcome, TimerQueue, trackTimerQueue } from '@conclave/service-kit';
import { AcpBridge } from './acp-bridge';
import { CouncilCommands } from './council-commands';
import { RunDriver } from './run-driver';
import { COUNCIL_RUN_CATEGORY } from './run-index';

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

  constructor(
    reactors: Reactors,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly commands: CouncilCommands,
    private readonly bridge: AcpBridge,
    private readonly driver: RunDriver,
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
      // Already done (a replica or an earlier attempt got there), or refused for good: say so once.
      if (!(err instanceof CouncilError && err.code === 'RUN_ALREADY_STARTED'))
        this.logger.warn(`${key}: refused: ${(err as Error).message}`);
      settleAcpReaction(this.state, key);
      return 'done';
    }
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
