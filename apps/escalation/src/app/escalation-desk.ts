import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AcpError, PROPOSAL_COMMAND_TYPES, PROPOSAL_EVENT_TYPES, reactionCommandId, routingFor } from '@conclave/acp-protocol';
import {
  CLOCK,
  Clock,
  ConclaveMetrics,
  METRICS,
  ProposalStore,
  SERVICE_CONFIG,
  TimerOutcome,
  TimerQueue,
  trackTimerQueue,
} from '@conclave/service-kit';
import { ESCALATION_SETTINGS, EscalationConfig, EscalationSettings } from './escalation.config';
import { EscalationInbox, InboxEntry } from './escalation-inbox';
import { payloadHash } from './payload-hash';

export const DESK_ACTOR = 'conclave-escalation';
/** The desk's slots among the reactions derived from one escalation id (routing, then each ladder step). */
const ROUTE_SLOT = 2000;
const LADDER_SLOT = 2001;

/**
 * The escalation desk's two duties, both commands through the pure decider, both kept in the
 * timer queue until recorded or refused (a failed attempt is retried with backoff):
 * - routing: every new escalation is taken (RouteEscalation) with its domain's route (assignees,
 *   ladder, sign-off) and the payload hash a resolution must match;
 * - the ladder: each open escalation's next step is due at its time and issues
 *   AdvanceEscalationLadder, which appends the reminder, the reassignment or the default outcome.
 * Command ids derive from the escalation id and the step, so replicas racing on the same step
 * append it once; a loser's decider finds nothing left to do.
 */
@Injectable()
export class EscalationDesk implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EscalationDesk.name);
  private readonly timers: TimerQueue;

  constructor(
    private readonly inbox: EscalationInbox,
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ESCALATION_SETTINGS) private readonly settings: EscalationSettings,
    @Inject(SERVICE_CONFIG) config: EscalationConfig,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    this.timers = new TimerQueue({
      clock,
      maxSleepMs: config.ladderSweepIntervalMs,
      run: (key) => (key.startsWith('route:') ? this.routeStep(key.slice(6)) : this.ladderStep(key.slice(7))),
      onRetry: (key, attempt, err) => {
        if (err && (attempt === 1 || attempt % 10 === 0))
          this.logger.warn(`${key}: attempt ${attempt} failed, retrying: ${(err as Error).message}`);
      },
    });
    inbox.onChange((entry, event, live) => {
      this.track(entry);
      if (live && event.type === PROPOSAL_EVENT_TYPES.ProposalEscalated)
        this.timers.schedule(`route:${entry.proposal_id}`, this.clock.now().getTime());
    });
    if (metrics) {
      trackTimerQueue(metrics, 'escalation', this.timers);
      metrics.observe(METRICS.openEscalations, {}, () => inbox.open().length);
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    // Nest runs the bootstrap hooks of one module concurrently: wait for the inbox to catch up,
    // then take what was escalated while no desk was running.
    await this.inbox.ready;
    for (const entry of this.inbox.open()) {
      this.track(entry);
      if (!entry.routed) this.timers.schedule(`route:${entry.proposal_id}`, this.clock.now().getTime());
    }
    this.timers.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.timers.stop();
  }

  /**
   * Routes the open escalation of a proposal if nobody has yet: queued for every new escalation,
   * and called by the resolve handler first, so a resolution always meets a routed escalation.
   */
  async route(proposalId: string): Promise<void> {
    const loaded = await this.store.load(proposalId);
    const { state } = loaded;
    if (state.status !== 'escalated' || state.desk.routing !== null) return;
    await this.store.execute(
      {
        type: PROPOSAL_COMMAND_TYPES.RouteEscalation,
        ...this.metadata(state.desk.escalationId, ROUTE_SLOT),
        data: {
          proposal_id: proposalId,
          escalation_id: state.desk.escalationId,
          payload_hash: state.proposal.payload_hash ?? payloadHash(state.proposal.payload),
          routing: routingFor(this.settings.routes, state.proposal, state.escalation),
        },
      },
      loaded,
    );
  }

  private async routeStep(proposalId: string): Promise<TimerOutcome> {
    try {
      await this.route(proposalId);
    } catch (err) {
      // NOT_ESCALATED: a human (or another replica's ladder) closed it first.
      if (!(err instanceof AcpError && err.code === 'NOT_ESCALATED')) throw err;
    }
    return 'done';
  }

  private track(entry: InboxEntry): void {
    const key = `ladder:${entry.proposal_id}`;
    if (entry.status === 'open' && entry.next_step_due_at !== null) this.timers.schedule(key, Date.parse(entry.next_step_due_at));
    else this.timers.cancel(key);
  }

  private async ladderStep(proposalId: string): Promise<TimerOutcome> {
    try {
      const loaded = await this.store.load(proposalId);
      if (loaded.state.status !== 'escalated') return 'done';
      const result = await this.store.execute(
        {
          type: PROPOSAL_COMMAND_TYPES.AdvanceEscalationLadder,
          ...this.metadata(loaded.state.desk.escalationId, LADDER_SLOT + loaded.state.desk.nextStep),
          data: { proposal_id: proposalId },
        },
        loaded,
      );
      // Nothing due after all (a clock a little behind the step): look again shortly. Once a
      // step is appended, the inbox tells `track` of the next one.
      return result.events.length === 0 ? 'retry' : 'done';
    } catch (err) {
      if (err instanceof AcpError && err.code === 'NOT_ESCALATED') return 'done';
      throw err;
    }
  }

  private metadata(escalationId: string, slot: number) {
    return { command_id: reactionCommandId(escalationId, slot), now: this.clock.now().toISOString(), actor: DESK_ACTOR };
  }
}
