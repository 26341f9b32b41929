import { Inject, Injectable } from '@nestjs/common';
import { isEscalationDeskEvent, PROPOSAL_EVENT_TYPES, PROPOSAL_STREAM_CATEGORY, ProposalEvent } from '@conclave/acp-protocol';
import { CheckpointStore, EventLog, StoredEvent } from '@conclave/event-log';
import { acpStreamNames, acpSubjects, ensureStream } from '@conclave/messaging';
import {
  CHECKPOINTS,
  EVENT_LOG,
  LogOutbox,
  NATS_CONNECTION,
  OutboxMessage,
  ProposalStore,
  Readiness,
  SERVICE_CONFIG,
  ServiceConfig,
} from '@conclave/service-kit';
import { NatsConnection } from 'nats';

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
export class EscalationNotifier extends LogOutbox<ProposalEvent> {
  private readonly subjects;
  private readonly streams;

  constructor(
    @Inject(EVENT_LOG) log: EventLog,
    @Inject(CHECKPOINTS) checkpoints: CheckpointStore<null>,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    private readonly store: ProposalStore,
    readiness: Readiness,
  ) {
    super({ checkpoint: 'escalation-notifier', categories: [PROPOSAL_STREAM_CATEGORY] }, log, checkpoints, nc, readiness);
    this.subjects = acpSubjects(config.subjectPrefix);
    this.streams = acpStreamNames(config.streamSuffix);
  }

  protected async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const replicas = this.config.logReplicas;
    await ensureStream(jsm, { name: this.streams.escalations, subjects: [this.subjects.allEscalations], replicas });
    await ensureStream(jsm, { name: this.streams.decisions, subjects: [this.subjects.allDecisions], replicas });
  }

  protected async messagesFor({ event }: StoredEvent<ProposalEvent>): Promise<OutboxMessage[]> {
    if (!isEscalationDeskEvent(event)) return [];
    const { state } = await this.store.load(event.data.proposal_id);
    if (state.status === 'initial') return [];
    const domain = state.proposal.domain;
    const body: EscalationNotification = {
      notification: NOTIFICATION_KINDS[event.type],
      event_id: event.event_id,
      event_type: event.type,
      occurred_at: event.occurred_at,
      domain,
      ...event.data,
    };
    return [{ subject: this.subjects.escalations(domain), body, msgId: event.event_id }];
  }
}
