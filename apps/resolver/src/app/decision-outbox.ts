import { Inject, Injectable } from '@nestjs/common';
import {
  isTerminalEvent,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  ProposalState,
  foldProposal,
  projectProposal,
  toDecisionEvent,
} from '@conclave/acp-protocol';
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

/**
 * The resolver's outbox: every decision event (RFC 11.1, one per terminal transition and one
 * after human resolution) to ACP_DECISIONS on `<prefix>.v1.decisions.<domain>`, every escalation
 * to ACP_ESCALATIONS, every new pending proposal to ACP_PROPOSALS for participants to review;
 * each with `Nats-Msg-Id` = the log event's id (see LogOutbox: nothing lost, nothing twice).
 */
@Injectable()
export class DecisionOutbox extends LogOutbox<ProposalEvent> {
  private readonly subjects;
  private readonly streams;
  /** Submissions of proposals not yet final, for their decisions' fixed details. */
  private readonly submitted = new Map<string, ProposalState>();

  constructor(
    @Inject(EVENT_LOG) log: EventLog,
    @Inject(CHECKPOINTS) checkpoints: CheckpointStore<null>,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    private readonly store: ProposalStore,
    readiness: Readiness,
  ) {
    super({ checkpoint: 'resolver-outbox', categories: [PROPOSAL_STREAM_CATEGORY] }, log, checkpoints, nc, readiness);
    this.subjects = acpSubjects(config.subjectPrefix);
    this.streams = acpStreamNames(config.streamSuffix);
  }

  protected async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const replicas = this.config.logReplicas;
    await ensureStream(jsm, { name: this.streams.decisions, subjects: [this.subjects.allDecisions], replicas });
    await ensureStream(jsm, { name: this.streams.proposals, subjects: [this.subjects.allProposals], replicas });
    await ensureStream(jsm, { name: this.streams.escalations, subjects: [this.subjects.allEscalations], replicas });
  }

  protected async messagesFor({ event }: StoredEvent<ProposalEvent>): Promise<OutboxMessage[]> {
    const messages: OutboxMessage[] = [];
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      const state = foldProposal([event]);
      this.submitted.set(event.data.proposal_id, state);
      if (event.data.type === 'proposal') {
        const proposal = projectProposal(state);
        messages.push({ subject: this.subjects.proposals(proposal.domain), body: proposal, msgId: event.event_id });
      }
    }
    if (isTerminalEvent(event)) {
      // A decision reads only the proposal's fixed details (domain, payload summary, hash): the
      // submission folded above, or, for one submitted before this outbox's checkpoint, any state.
      const id = event.data.proposal_id;
      const state = this.submitted.get(id) ?? (await this.store.load(id, 'cache')).state;
      const decision = toDecisionEvent(event, state);
      if (decision) {
        messages.push({ subject: this.subjects.decisions(decision.domain), body: decision, msgId: decision.event_id });
        if (decision.outcome === 'escalated') {
          const body = { decision, proposal: projectProposal(state) };
          messages.push({ subject: this.subjects.escalations(decision.domain), body, msgId: decision.event_id });
        } else {
          this.submitted.delete(id);
        }
      }
    }
    return messages;
  }
}
