import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AcpError, PROPOSAL_COMMAND_TYPES, PROPOSAL_EVENT_TYPES, routingFor } from '@conclave/acp-protocol';
import { CLOCK, Clock, IDS, IdGenerator, ProposalStore, SERVICE_CONFIG } from '@conclave/service-kit';
import { ESCALATION_SETTINGS, EscalationConfig, EscalationSettings } from './escalation.config';
import { EscalationInbox, InboxEntry } from './escalation-inbox';
import { payloadHash } from './payload-hash';

export const DESK_ACTOR = 'conclave-escalation';
/** Re-arm at least this often, so a wall-clock jump never leaves the timer asleep for long. */
const MAX_SLEEP_MS = 60_000;

/**
 * The escalation desk's two duties, both commands through the pure decider:
 * - routing: every new escalation is taken (RouteEscalation) with its domain's route (assignees,
 *   ladder, sign-off) and the payload hash a resolution must match;
 * - the ladder: a timer set for the earliest due step issues AdvanceEscalationLadder, which appends
 *   the reminder, the reassignment or the default outcome. A periodic sweep is the safety net.
 * Replicas race harmlessly: the compare-and-swap append records each step once; the loser's decider
 * finds nothing left to do.
 */
@Injectable()
export class EscalationDesk implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EscalationDesk.name);
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly inbox: EscalationInbox,
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    @Inject(ESCALATION_SETTINGS) private readonly settings: EscalationSettings,
    @Inject(SERVICE_CONFIG) private readonly config: EscalationConfig,
  ) {
    inbox.onChange((entry, event, live) => {
      this.track(entry);
      if (live && event.type === PROPOSAL_EVENT_TYPES.ProposalEscalated) void this.route(entry.proposal_id);
      if (live) this.arm();
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    // Nest runs the bootstrap hooks of one module concurrently: wait for the inbox to catch up,
    // then take what was escalated while no desk was running.
    await this.inbox.ready;
    for (const entry of this.inbox.open()) {
      this.track(entry);
      if (!entry.routed) await this.route(entry.proposal_id);
    }
    this.arm();
    this.sweepTimer = setInterval(() => void this.sweep(), this.config.ladderSweepIntervalMs);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    clearInterval(this.sweepTimer);
    await Promise.all([...this.inFlight.values()]);
  }

  /**
   * Routes the open escalation of a proposal if nobody has yet: called for every new escalation,
   * and by the resolve handler first, so a resolution always meets a routed escalation.
   */
  async route(proposalId: string): Promise<void> {
    try {
      const loaded = await this.store.load(proposalId);
      const { state } = loaded;
      if (state.status !== 'escalated' || state.desk.routing !== null) return;
      await this.store.execute({
        type: PROPOSAL_COMMAND_TYPES.RouteEscalation,
        ...this.metadata(),
        data: {
          proposal_id: proposalId,
          escalation_id: state.desk.escalationId,
          payload_hash: state.proposal.payload_hash ?? payloadHash(state.proposal.payload),
          routing: routingFor(this.settings.routes, state.proposal, state.escalation),
        },
      }, loaded);
    } catch (err) {
      // NOT_ESCALATED: a human (or another replica's ladder) closed it first.
      if (err instanceof AcpError && err.code === 'NOT_ESCALATED') return;
      this.logger.warn(`routing ${proposalId} failed, the sweep will retry: ${(err as Error).message}`);
    }
  }

  private track(entry: InboxEntry): void {
    if (entry.status === 'open' && entry.next_step_due_at !== null) this.due.set(entry.proposal_id, Date.parse(entry.next_step_due_at));
    else this.due.delete(entry.proposal_id);
  }

  /** One timer, for the earliest due step. */
  private arm(): void {
    if (this.stopping) return;
    clearTimeout(this.timer);
    let next = Infinity;
    for (const at of this.due.values()) next = Math.min(next, at);
    if (next === Infinity) return;
    const delay = Math.min(Math.max(0, next - this.clock.now().getTime()), MAX_SLEEP_MS);
    this.timer = setTimeout(() => void this.wake(), delay);
  }

  private async wake(): Promise<void> {
    const now = this.clock.now().getTime();
    const ids = [...this.due].filter(([, at]) => at <= now).map(([id]) => id);
    await Promise.all(ids.map((id) => this.advance(id)));
    this.arm();
  }

  private async sweep(): Promise<void> {
    for (const entry of this.inbox.open()) {
      if (this.stopping) return;
      if (!entry.routed) await this.route(entry.proposal_id);
    }
    await this.wake();
  }

  private advance(proposalId: string): Promise<void> {
    const running = this.inFlight.get(proposalId);
    if (running) return running;
    const work = (async () => {
      try {
        const result = await this.store.execute({
          type: PROPOSAL_COMMAND_TYPES.AdvanceEscalationLadder,
          ...this.metadata(),
          data: { proposal_id: proposalId },
        });
        // Nothing due after all (a clock a little behind the step): look again shortly.
        if (result.events.length === 0 && this.due.has(proposalId)) this.due.set(proposalId, this.clock.now().getTime() + 20);
      } catch (err) {
        if (err instanceof AcpError && err.code === 'NOT_ESCALATED') {
          this.due.delete(proposalId);
          return;
        }
        this.logger.warn(`ladder step for ${proposalId} failed, the sweep will retry: ${(err as Error).message}`);
      } finally {
        this.inFlight.delete(proposalId);
      }
    })();
    this.inFlight.set(proposalId, work);
    return work;
  }

  private metadata() {
    return { command_id: this.ids.next(), now: this.clock.now().toISOString(), actor: DESK_ACTOR };
  }
}
