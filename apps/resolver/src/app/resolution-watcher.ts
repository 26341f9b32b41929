import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  AcpError,
  childOutcomeOf,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  ProposalState,
  isTerminalEvent,
  pendingResolution,
} from '@conclave/acp-protocol';
import type { EventLog, StoredEvent, Subscription } from '@conclave/event-log';
import { CLOCK, Clock, EVENT_LOG, IDS, IdGenerator, KeyedWorkQueue, ProposalStore, Readiness } from '@conclave/service-kit';

const ACTOR = 'conclave-resolver';

/**
 * Resolves proposals whose quorum policy is met (RFC 3.1 Resolve, 7) and parents whose children
 * have all reached a final outcome (9.3). It follows the whole proposal log; during catch-up it
 * only notes which proposals are still open, then examines each once; live, it examines every
 * proposal an event touches. Every action goes through the decider and a compare-and-swap
 * append, so any number of replicas record exactly one resolution (15.4): a replica that loses
 * the race re-reads, and the decider finds nothing left to do.
 */
@Injectable()
export class ResolutionWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ResolutionWatcher.name);
  /** child proposal id → parents waiting for it (from the parents' submissions). */
  private readonly parentsOf = new Map<string, Set<string>>();
  /** Proposals not yet terminal, noted during catch-up. */
  private readonly open = new Set<string>();
  private live = false;
  private subscription: Subscription | undefined;
  /** Proposals are examined concurrently, each one's events in order. */
  private readonly work = new KeyedWorkQueue(256, (id, err) => this.logger.error(`examining ${id} failed: ${(err as Error).message}`));

  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog,
    private readonly store: ProposalStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    readiness: Readiness,
  ) {
    readiness.register('resolution-watcher', () => this.live);
  }

  async onApplicationBootstrap(): Promise<void> {
    const sub = (this.log as EventLog<ProposalEvent>).subscribe([PROPOSAL_STREAM_CATEGORY], 'start', (e) => this.onEvent(e));
    this.subscription = sub;
    sub.closed.catch((err: Error) => this.logger.error(`proposal subscription ended: ${err.message}`));
    await sub.caughtUp;
    for (const id of this.open) await this.work.submit(id, () => this.examine(id));
    await this.work.drain();
    this.open.clear();
    this.live = true;
  }

  async onApplicationShutdown(): Promise<void> {
    this.live = false;
    await this.subscription?.stop();
    await this.work.drain();
  }

  private async onEvent({ event, endOfCommit }: StoredEvent<ProposalEvent>): Promise<void> {
    const id = event.data.proposal_id;
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      for (const child of event.data.depends_on ?? []) {
        const parents = this.parentsOf.get(child) ?? new Set<string>();
        this.parentsOf.set(child, parents.add(id));
      }
    }
    if (!this.live) {
      if (isTerminalEvent(event) && event.type !== PROPOSAL_EVENT_TYPES.ProposalEscalated) this.open.delete(id);
      else this.open.add(id);
      return;
    }
    // Only events that can make a resolution due, or a child's final outcome, need a look.
    const mayResolve =
      event.type === PROPOSAL_EVENT_TYPES.ResponseRecorded ||
      event.type === PROPOSAL_EVENT_TYPES.ChildOutcomeRecorded ||
      (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted && (event.data.depends_on?.length ?? 0) > 0);
    const decidesChild = isTerminalEvent(event) && this.parentsOf.has(id);
    if (endOfCommit && (mayResolve || decidesChild)) await this.work.submit(id, () => this.examine(id));
  }

  /** Does this proposal need a resolution, or do its parents need its outcome? */
  private async examine(proposalId: string): Promise<void> {
    try {
      const loaded = await this.store.load(proposalId);
      const { state } = loaded;
      if (state.status === 'initial') return;
      if (pendingResolution(state, this.store.decider)) {
        await this.store.execute({
          type: PROPOSAL_COMMAND_TYPES.ResolveProposal,
          ...this.metadata(),
          data: { proposal_id: proposalId },
        }, loaded);
      }
      if (state.status === 'pending' && state.proposal.depends_on.length > 0) {
        await this.recordKnownChildOutcomes(proposalId, state.proposal.depends_on, state.childOutcomes);
      }
      await this.notifyParents(proposalId, state);
    } catch (err) {
      // A typed rejection means another replica (or a human) got there first: nothing to do.
      if (!(err instanceof AcpError) || err.code === 'INTERNAL') {
        this.logger.error(`examining ${proposalId} failed: ${(err as Error).message}`);
      }
    }
  }

  private async notifyParents(childId: string, child: ProposalState): Promise<void> {
    const outcome = child.status === 'resolved' || child.status === 'expired' ? childOutcomeOf(child.resolution) : undefined;
    if (!outcome) return;
    for (const parentId of this.parentsOf.get(childId) ?? []) {
      await this.recordChildOutcome(parentId, childId, outcome);
    }
  }

  /** A parent submitted after some of its children were already decided. */
  private async recordKnownChildOutcomes(parentId: string, children: readonly string[], recorded: Readonly<Record<string, unknown>>) {
    for (const childId of children) {
      if (recorded[childId] !== undefined) continue;
      const { state } = await this.store.load(childId);
      const outcome = state.status === 'resolved' || state.status === 'expired' ? childOutcomeOf(state.resolution) : undefined;
      if (outcome) await this.recordChildOutcome(parentId, childId, outcome);
    }
  }

  /** The parent's own event then brings it back here, where it resolves once all are in. */
  private async recordChildOutcome(parentId: string, childId: string, outcome: 'approved' | 'rejected' | 'expired') {
    await this.store.execute({
      type: PROPOSAL_COMMAND_TYPES.RecordChildOutcome,
      ...this.metadata(),
      data: { proposal_id: parentId, child_proposal_id: childId, outcome },
    });
  }

  private metadata() {
    return { command_id: this.ids.next(), now: this.clock.now().toISOString(), actor: ACTOR };
  }
}
