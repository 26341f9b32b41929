import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  AcpError,
  finalChildOutcome,
  initialProposalState,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  ProposalState,
  proposalStream,
  reactionCommandId,
  resolverReactions,
  ResolverReaction,
  evolveProposal,
} from '@conclave/acp-protocol';
import type { StoredEvent, StreamVersion } from '@conclave/event-log';
import {
  CLOCK,
  Clock,
  ConclaveMetrics,
  METRICS,
  ProposalStore,
  Reactor,
  Reactors,
  TimerOutcome,
  TimerQueue,
  trackTimerQueue,
} from '@conclave/service-kit';

const ACTOR = 'conclave-resolver';

/** A proposal the resolver follows: its state folded from the events it was handed. */
interface Followed {
  state: ProposalState;
  version: StreamVersion | 'no_stream';
  /** Last event folded: reactions due now derive their command ids from it. */
  trigger: string;
  /** When that event was recorded (ms), for the quorum-to-decision delay. */
  triggerAt?: number;
}

/**
 * Resolves proposals whose quorum policy is met (RFC 3.1 Resolve, 7) and parents whose children
 * have all reached a final outcome (9.3). A reactor: it folds every open proposal from the events
 * its subscription hands it (never reloading what it was just told), asks the pure workflow what
 * is due, and keeps each reaction in the timer queue until its command is recorded or refused for
 * good. Command ids derive from the triggering event, so replicas racing on the same reaction
 * append the same events, which the log keeps once (15.4).
 */
@Injectable()
export class ResolutionWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ResolutionWatcher.name);
  /** Proposals not yet final (pending or escalated). */
  private readonly open = new Map<string, Followed>();
  /** child proposal id → parents waiting for it (from the parents' submissions), in log order. */
  private readonly parentsOf = new Map<string, string[]>();
  /** Reactions waiting in the timer queue, by key. */
  private readonly reactions = new Map<string, { reaction: ResolverReaction; trigger: string; slot: number; since?: number }>();
  private readonly reactor: Reactor<ProposalEvent>;
  private readonly timers: TimerQueue;
  private live = false;
  private readonly quorumToDecision;

  constructor(
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    reactors: Reactors,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    this.timers = new TimerQueue({
      name: 'resolver',
      clock,
      parallel: 64,
      run: (key) => this.react(key),
      onRetry: (key, attempt, err) => {
        const message = err instanceof Error ? err.message : 'still due';
        if (attempt === 1 || attempt % 10 === 0) this.logger.warn(`${key}: attempt ${attempt} failed, retrying: ${message}`);
      },
    });
    this.reactor = reactors.create<ProposalEvent>({
      name: 'resolver',
      categories: [PROPOSAL_STREAM_CATEGORY],
      // What it schedules (an expiry, a resolution) continues the trace of the event behind it.
      inTrace: true,
      apply: (e) => this.apply(e),
      caughtUp: () => this.caughtUp(),
      snapshot: {
        schema: 1,
        take: () => ({ open: this.open, parentsOf: this.parentsOf }),
        restore: (saved) => {
          const s = saved as { open: Map<string, Followed>; parentsOf: Map<string, string[]> };
          for (const [id, f] of s.open) this.open.set(id, f);
          for (const [id, p] of s.parentsOf) this.parentsOf.set(id, p);
        },
      },
    });
    if (metrics) {
      trackTimerQueue(metrics, 'resolver', this.timers);
      metrics.observe(METRICS.pendingProposals, {}, () => this.pendingCount());
    }
    this.quorumToDecision = metrics?.histogram(METRICS.quorumToDecision);
  }

  private pendingCount(): number {
    let n = 0;
    for (const f of this.open.values()) if (f.state.status === 'pending') n++;
    return n;
  }

  /** Reactions waiting or being retried (for metrics and tests). */
  get backlog(): number {
    return this.timers.size;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
    await this.timers.stop();
  }

  private apply({ event, version, endOfCommit }: StoredEvent<ProposalEvent>): void {
    const id = event.data.proposal_id;
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      for (const child of event.data.depends_on ?? []) this.parentsOf.set(child, [...(this.parentsOf.get(child) ?? []), id]);
    }
    const followed = this.open.get(id) ?? { state: initialProposalState, version: 'no_stream', trigger: event.event_id };
    followed.state = evolveProposal(followed.state, event);
    followed.trigger = event.event_id;
    followed.triggerAt = Date.parse(event.occurred_at);
    if (!endOfCommit) {
      this.open.set(id, followed);
      return;
    }
    followed.version = version;
    if (this.live) this.schedule(id, followed);
    if (finalChildOutcome(followed.state) !== undefined) this.open.delete(id);
    else this.open.set(id, followed);
    if (this.live && event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted && (event.data.depends_on?.length ?? 0) > 0) {
      void this.recordKnownChildOutcomes(id, event.data.depends_on ?? []);
    }
  }

  /** Once caught up (at start, and after a resumed subscription): whatever is due now. */
  private async caughtUp(): Promise<void> {
    this.live = true;
    for (const [id, followed] of this.open) {
      this.schedule(id, followed);
      if (followed.state.status === 'pending' && followed.state.proposal.depends_on.length > 0) {
        await this.recordKnownChildOutcomes(id, followed.state.proposal.depends_on);
      }
    }
    this.timers.start();
  }

  private schedule(id: string, followed: Followed): void {
    resolverReactions(followed.state, this.parentsOf.get(id) ?? [], this.store.decider).forEach((reaction, slot) => {
      const key = reaction.kind === 'resolve' ? `resolve:${id}` : `child:${reaction.proposal_id}:${id}`;
      if (this.reactions.has(key)) return;
      this.reactions.set(key, { reaction, trigger: followed.trigger, slot, since: followed.triggerAt });
      this.timers.schedule(key, this.clock.now().getTime());
    });
  }

  /** Runs one reaction; it stays queued (retried with backoff) until recorded or refused. */
  private async react(key: string): Promise<TimerOutcome> {
    const queued = this.reactions.get(key);
    if (!queued) return 'done';
    const { reaction, trigger, slot } = queued;
    const command = { command_id: reactionCommandId(trigger, slot), now: this.clock.now().toISOString(), actor: ACTOR };
    try {
      if (reaction.kind === 'resolve') {
        const followed = this.open.get(reaction.proposal_id);
        if (!followed || resolverReactions(followed.state, [], this.store.decider).length === 0) {
          this.reactions.delete(key);
          return 'done';
        }
        const loaded = { stream: proposalStream(reaction.proposal_id), state: followed.state, version: followed.version, cached: true };
        const outcome = await this.store.execute(
          { type: PROPOSAL_COMMAND_TYPES.ResolveProposal, ...command, data: { proposal_id: reaction.proposal_id } },
          loaded,
        );
        if (!outcome.duplicate && outcome.events.length > 0 && queued.since !== undefined) {
          this.quorumToDecision?.observe(Math.max(0, Date.parse(command.now) - queued.since) / 1000);
        }
      } else {
        await this.store.execute({
          type: PROPOSAL_COMMAND_TYPES.RecordChildOutcome,
          ...command,
          data: { proposal_id: reaction.proposal_id, child_proposal_id: reaction.child_proposal_id, outcome: reaction.outcome },
        });
      }
      this.reactions.delete(key);
      return 'done';
    } catch (err) {
      // A typed refusal means another replica, a human or the sweeper got there first.
      if (err instanceof AcpError && err.code !== 'INTERNAL' && err.code !== 'CONFLICT') {
        this.reactions.delete(key);
        return 'done';
      }
      throw err;
    }
  }

  /** A parent submitted after some of its children were already decided. */
  private async recordKnownChildOutcomes(parentId: string, children: readonly string[]): Promise<void> {
    for (const childId of children) {
      if (this.open.has(childId)) continue;
      const key = `child:${parentId}:${childId}`;
      if (this.reactions.has(key)) continue;
      try {
        const { state } = await this.store.load(childId);
        const outcome = finalChildOutcome(state);
        if (!outcome || state.status === 'initial') continue;
        const trigger = this.open.get(parentId)?.trigger;
        if (!trigger) continue;
        this.reactions.set(key, {
          reaction: { kind: 'record-child-outcome', proposal_id: parentId, child_proposal_id: childId, outcome },
          trigger,
          slot: 1 + children.indexOf(childId),
        });
        this.timers.schedule(key, this.clock.now().getTime());
      } catch (err) {
        this.logger.warn(`reading child ${childId} of ${parentId} failed: ${(err as Error).message}`);
      }
    }
  }
}
