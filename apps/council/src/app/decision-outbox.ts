import { Inject, Injectable } from '@nestjs/common';
import { COUNCIL_EVENT_TYPES as E, CouncilEvent, RunTerminated, ValueChoiceResolved } from '@conclave/council-protocol';
import type { CheckpointStore, EventLog, StoredEvent } from '@conclave/event-log';
import { acpStreamNames, councilSubjects, ensureStream } from '@conclave/messaging';
import { CHECKPOINTS, EVENT_LOG, LogOutbox, NATS_CONNECTION, OutboxMessage, Readiness, SERVICE_CONFIG } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { CouncilConfig } from './council.config';
import { COUNCIL_RUN_CATEGORY } from './run-index';
import { RunRepository } from './run-repository';

/** What downstream systems read on `<prefix>.v1.decisions`: the run's end and its DecisionRecord. */
export interface CouncilDecisionMessage {
  event_id: string;
  run_id: string;
  goal_contract_id: string;
  terminal_state: RunTerminated['data']['terminal_state'];
  reason: RunTerminated['data']['reason'];
  best_checkpoint_id: string | null;
  decided_at: string;
  /** Null when the run ended without a chair decision (failed-below-quorum, time or cost budget). */
  decision_record: unknown;
  note?: string;
  /** The decision owner's value choice: a second message for the run, with the terminal state after it. */
  value_choice?: ValueChoiceResolved['data'];
}

/**
 * The council's decision outbox: each RunTerminated, and each ValueChoiceResolved (the run's
 * terminal state after its owner's value choice), becomes one message on the JetStream stream
 * COUNCIL_DECISIONS (`<prefix>.v1.decisions`) carrying the DecisionRecord with its dissent,
 * `Nats-Msg-Id` = the event id (see LogOutbox: nothing lost, nothing twice; a failed publish
 * resumes from the checkpoint).
 */
@Injectable()
export class DecisionOutbox extends LogOutbox<CouncilEvent> {
  constructor(
    @Inject(EVENT_LOG) log: EventLog,
    @Inject(CHECKPOINTS) checkpoints: CheckpointStore<null>,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    private readonly repo: RunRepository,
    readiness: Readiness,
  ) {
    // The checkpoint keeps the name it had when the run index published: an upgrade resumes there.
    super({ checkpoint: 'council-outbox', categories: [COUNCIL_RUN_CATEGORY] }, log, checkpoints, nc, readiness);
  }

  protected async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    await ensureStream(jsm, {
      name: acpStreamNames(this.config.streamSuffix).councilDecisions,
      subjects: [councilSubjects(this.config.councilPrefix).decisions],
      replicas: this.config.logReplicas,
    });
  }

  protected async messagesFor({ event }: StoredEvent<CouncilEvent>): Promise<OutboxMessage[]> {
    if (event.type !== E.RunTerminated && event.type !== E.ValueChoiceResolved) return [];
    const { state } = await this.repo.load(event.correlation_id);
    if (state.status !== 'terminated') return [];
    const body: CouncilDecisionMessage =
      event.type === E.RunTerminated
        ? {
            event_id: event.event_id,
            run_id: event.correlation_id,
            goal_contract_id: state.goal_contract.goal_contract_id,
            terminal_state: event.data.terminal_state,
            reason: event.data.reason,
            best_checkpoint_id: event.data.best_checkpoint_id,
            decided_at: event.occurred_at,
            decision_record: state.decision?.decision_record ?? null,
            ...(event.data.note ? { note: event.data.note } : {}),
          }
        : {
            event_id: event.event_id,
            run_id: event.correlation_id,
            goal_contract_id: state.goal_contract.goal_contract_id,
            terminal_state: event.data.terminal_state,
            reason: state.terminal.reason,
            best_checkpoint_id: state.terminal.best_checkpoint_id,
            decided_at: event.occurred_at,
            decision_record: state.decision?.decision_record ?? null,
            value_choice: event.data,
          };
    return [{ subject: councilSubjects(this.config.councilPrefix).decisions, body, msgId: event.event_id }];
  }
}
