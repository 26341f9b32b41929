import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  isTerminalEvent,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  foldProposal,
  projectProposal,
  toDecisionEvent,
} from '@conclave/acp-protocol';
import { CheckpointConflictError, CheckpointStore, EventLog, StartFrom, StoredEvent, Subscription } from '@conclave/event-log';
import { acpStreamNames, acpSubjects, ensureStream, publishJsonOnce } from '@conclave/messaging';
import { CHECKPOINTS, EVENT_LOG, NATS_CONNECTION, ProposalStore, Readiness, SERVICE_CONFIG, ServiceConfig } from '@conclave/service-kit';
import { NatsConnection } from 'nats';

const CHECKPOINT = 'resolver-outbox';
const SAVE_EVERY = 50;
const SAVE_AFTER_MS = 200;
const MAX_IN_FLIGHT = 512;

/**
 * Publishes from the log (an outbox): every decision event (RFC 11.1, one per terminal
 * transition and one after human resolution) to ACP_DECISIONS on `<prefix>.v1.decisions.<domain>`,
 * every escalation to ACP_ESCALATIONS, every new pending proposal to ACP_PROPOSALS for
 * participants to review. `Nats-Msg-Id` is the log event's id, so a replay after a crash or a
 * second replica publishing the same event is dropped by JetStream: nothing lost, nothing twice.
 * The position is checkpointed after publishing; replicas share it (compare-and-set).
 */
@Injectable()
export class DecisionOutbox implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DecisionOutbox.name);
  private readonly subjects;
  private readonly streams;
  private subscription: Subscription | undefined;
  private position: StartFrom = 'start';
  private revision = 0;
  private unsaved = 0;
  private timer: NodeJS.Timeout | undefined;
  private caughtUp = false;
  private stopping = false;
  /** Publishes awaiting their acknowledgement; the checkpoint never passes an unacknowledged one. */
  private inFlight: Promise<unknown>[] = [];

  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog,
    @Inject(CHECKPOINTS) private readonly checkpoints: CheckpointStore<null>,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    private readonly store: ProposalStore,
    readiness: Readiness,
  ) {
    this.subjects = acpSubjects(config.subjectPrefix);
    this.streams = acpStreamNames(config.streamSuffix);
    readiness.register('decision-outbox', () => this.caughtUp);
  }

  async onApplicationBootstrap(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const replicas = this.config.logReplicas;
    await ensureStream(jsm, { name: this.streams.decisions, subjects: [this.subjects.allDecisions], replicas });
    await ensureStream(jsm, { name: this.streams.proposals, subjects: [this.subjects.allProposals], replicas });
    await ensureStream(jsm, { name: this.streams.escalations, subjects: [this.subjects.allEscalations], replicas });
    const stored = await this.checkpoints.load(CHECKPOINT);
    this.position = stored?.position ?? 'start';
    this.revision = stored?.revision ?? 0;
    await this.follow();
    await this.save();
    this.caughtUp = true;
  }

  private async follow(): Promise<void> {
    const sub = (this.log as EventLog<ProposalEvent>).subscribe([PROPOSAL_STREAM_CATEGORY], this.position, (e) => this.publish(e));
    this.subscription = sub;
    sub.closed.catch((err: Error) => this.restart(err));
    await sub.caughtUp;
  }

  /** After a failed publish or subscription: resume from the last saved checkpoint. */
  private restart(err: Error): void {
    if (this.stopping) return;
    this.logger.error(`outbox restarting from its checkpoint: ${err.message}`);
    const old = this.subscription;
    this.subscription = undefined;
    this.inFlight = [];
    this.unsaved = 0;
    void (async () => {
      await old?.stop().catch(() => undefined);
      const stored = await this.checkpoints.load(CHECKPOINT).catch(() => undefined);
      this.position = stored?.position ?? 'start';
      this.revision = stored?.revision ?? 0;
      await new Promise((r) => setTimeout(r, 1_000));
      if (!this.stopping) await this.follow();
    })().catch((e: Error) => this.restart(e));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.subscription?.stop();
    clearTimeout(this.timer);
    await this.save();
  }

  /**
   * Publishes are pipelined in log order (one connection keeps them in order); a failed
   * acknowledgement fails the next save, so the checkpoint stays behind it and a restart
   * publishes it again (deduplicated by Nats-Msg-Id).
   */
  private async publish({ event, position }: StoredEvent<ProposalEvent>): Promise<void> {
    const js = this.nc.jetstream();
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted && event.data.type === 'proposal') {
      const proposal = projectProposal(foldProposal([event]));
      this.inFlight.push(publishJsonOnce(js, this.subjects.proposals(proposal.domain), proposal, event.event_id));
    }
    if (isTerminalEvent(event)) {
      const { state } = await this.store.load(event.data.proposal_id);
      const decision = toDecisionEvent(event, state);
      if (decision) {
        this.inFlight.push(publishJsonOnce(js, this.subjects.decisions(decision.domain), decision, decision.event_id));
        if (decision.outcome === 'escalated') {
          const proposal = projectProposal(state);
          this.inFlight.push(publishJsonOnce(js, this.subjects.escalations(decision.domain), { decision, proposal }, decision.event_id));
        }
      }
    }
    this.position = position;
    if (++this.unsaved >= SAVE_EVERY || this.inFlight.length >= MAX_IN_FLIGHT) await this.save();
    else this.timer ??= setTimeout(() => void this.save().catch((err: Error) => this.restart(err)), SAVE_AFTER_MS);
  }

  /** Saves the position; another replica may be ahead, which is fine: keep the later one. */
  private async save(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const acks = this.inFlight;
    this.inFlight = [];
    const position = this.position;
    try {
      await Promise.all(acks);
    } catch (err) {
      // Stop here: the subscription handler's failure ends it, and a restart resumes from the last save.
      throw new Error(`decision publish not acknowledged; the outbox resumes from its checkpoint: ${(err as Error).message}`);
    }
    if (this.unsaved === 0 && this.revision > 0) return;
    this.unsaved = 0;
    try {
      this.revision = await this.checkpoints.save(CHECKPOINT, { position, state: null }, this.revision);
    } catch (err) {
      if (!(err instanceof CheckpointConflictError)) {
        this.logger.warn(`outbox checkpoint not saved: ${(err as Error).message}`);
        return;
      }
      const stored = await this.checkpoints.load(CHECKPOINT);
      this.revision = stored?.revision ?? 0;
      if (stored && stored.position !== 'start' && position !== 'start' && stored.position >= position) return;
      this.revision = await this.checkpoints.save(CHECKPOINT, { position, state: null }, this.revision).catch(() => this.revision);
    }
  }
}
