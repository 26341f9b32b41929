import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { isEscalationDeskEvent, PROPOSAL_EVENT_TYPES, PROPOSAL_STREAM_CATEGORY, ProposalEvent } from '@conclave/acp-protocol';
import { CheckpointConflictError, CheckpointStore, EventLog, StartFrom, StoredEvent, Subscription } from '@conclave/event-log';
import { acpStreamNames, acpSubjects, ensureStream, publishJsonOnce } from '@conclave/messaging';
import { CHECKPOINTS, EVENT_LOG, NATS_CONNECTION, ProposalStore, Readiness, SERVICE_CONFIG, ServiceConfig } from '@conclave/service-kit';
import { NatsConnection } from 'nats';

const CHECKPOINT = 'escalation-notifier';
const SAVE_AFTER_MS = 200;

/** The `notification` field of a message on `<prefix>.v1.escalations.<domain>`, by event type. */
export const NOTIFICATION_KINDS = {
  [PROPOSAL_EVENT_TYPES.EscalationRouted]: 'assigned',
  [PROPOSAL_EVENT_TYPES.EscalationReminded]: 'reminder',
  [PROPOSAL_EVENT_TYPES.EscalationReassigned]: 'reassigned',
  [PROPOSAL_EVENT_TYPES.EscalationSignedOff]: 'sign-off',
  [PROPOSAL_EVENT_TYPES.EscalationDefaulted]: 'default-outcome',
} as const;

export type EscalationNotification = {
  notification: (typeof NOTIFICATION_KINDS)[keyof typeof NOTIFICATION_KINDS];
  event_id: string;
  event_type: string;
  occurred_at: string;
  domain: string;
} & Record<string, unknown>;

/**
 * Spec 10.4 (channels): every step of the escalation desk - assignment, reminder, reassignment,
 * sign-off, default outcome - is published from the log to ACP_ESCALATIONS on
 * `<prefix>.v1.escalations.<domain>`, with `Nats-Msg-Id` = the event id, so a replay or a second
 * replica publishes nothing twice. (The escalation itself is published there by the resolver's
 * outbox, with the decision event.) Email, chat or ticketing bridges subscribe to that subject.
 */
@Injectable()
export class EscalationNotifier implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(EscalationNotifier.name);
  private readonly subjects;
  private readonly streams;
  private subscription: Subscription | undefined;
  private position: StartFrom = 'start';
  private revision = 0;
  private unsaved = 0;
  private timer: NodeJS.Timeout | undefined;
  private caughtUp = false;

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
    readiness.register('escalation-notifier', () => this.caughtUp);
  }

  async onApplicationBootstrap(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const replicas = this.config.logReplicas;
    await ensureStream(jsm, { name: this.streams.escalations, subjects: [this.subjects.allEscalations], replicas });
    await ensureStream(jsm, { name: this.streams.decisions, subjects: [this.subjects.allDecisions], replicas });
    const stored = await this.checkpoints.load(CHECKPOINT);
    this.position = stored?.position ?? 'start';
    this.revision = stored?.revision ?? 0;
    const sub = (this.log as EventLog<ProposalEvent>).subscribe([PROPOSAL_STREAM_CATEGORY], this.position, (e) => this.publish(e));
    this.subscription = sub;
    sub.closed.catch((err: Error) => this.logger.error(`notifier subscription ended: ${err.message}`));
    await sub.caughtUp;
    await this.save();
    this.caughtUp = true;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscription?.stop();
    clearTimeout(this.timer);
    await this.save();
  }

  private async publish({ event, position }: StoredEvent<ProposalEvent>): Promise<void> {
    if (isEscalationDeskEvent(event)) {
      const { state } = await this.store.load(event.data.proposal_id);
      if (state.status !== 'initial') {
        const domain = state.proposal.domain;
        const body: EscalationNotification = {
          notification: NOTIFICATION_KINDS[event.type],
          event_id: event.event_id,
          event_type: event.type,
          occurred_at: event.occurred_at,
          domain,
          ...event.data,
        };
        await publishJsonOnce(this.nc.jetstream(), this.subjects.escalations(domain), body, event.event_id);
      }
    }
    this.position = position;
    this.unsaved++;
    this.timer ??= setTimeout(() => void this.save(), SAVE_AFTER_MS);
  }

  private async save(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.unsaved === 0 && this.revision > 0) return;
    this.unsaved = 0;
    try {
      this.revision = await this.checkpoints.save(CHECKPOINT, { position: this.position, state: null }, this.revision);
    } catch (err) {
      if (!(err instanceof CheckpointConflictError)) {
        this.logger.warn(`notifier checkpoint not saved: ${(err as Error).message}`);
        return;
      }
      // Another replica saved: keep the later position.
      const stored = await this.checkpoints.load(CHECKPOINT);
      this.revision = stored?.revision ?? 0;
      if (stored && stored.position !== 'start' && this.position !== 'start' && stored.position >= this.position) return;
      this.revision = await this.checkpoints.save(CHECKPOINT, { position: this.position, state: null }, this.revision).catch(() => this.revision);
    }
  }
}
