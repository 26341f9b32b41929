import { Inject, Injectable } from '@nestjs/common';
import { COUNCIL_EVENT_TYPES as E, CouncilEvent, StructuredOutcome } from '@conclave/council-protocol';
import type { CheckpointStore, EventLog, StoredEvent } from '@conclave/event-log';
import { acpStreamNames, councilSubjects, ensureStream } from '@conclave/messaging';
import { CHECKPOINTS, EVENT_LOG, LogOutbox, NATS_CONNECTION, OutboxMessage, Readiness, SERVICE_CONFIG } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { CouncilConfig } from './council.config';
import { COUNCIL_RUN_CATEGORY } from './run-index';

/** What downstream systems read on `<prefix>.v1.outcomes`: one recorded outcome of a run's decision. */
export interface CouncilOutcomeMessage {
  event_id: string;
  run_id: string;
  outcome_id: string;
  recorded_by: string;
  recorded_at: string;
  /** council:L5 outcomes carry their structure (decision_id, verdict, source_kind, ...); older ones do not. */
  structured: StructuredOutcome | null;
  summary: string;
  source: string;
  evidence_refs: string[];
}

/**
 * Publishes every OutcomeRecorded from the log on the JetStream stream COUNCIL_OUTCOMES
 * (`<prefix>.v1.outcomes`), `Nats-Msg-Id` = the event id: an outbox, so an outcome in the log is
 * published exactly once whatever restarts in between.
 */
@Injectable()
export class OutcomeOutbox extends LogOutbox<CouncilEvent> {
  constructor(
    @Inject(EVENT_LOG) log: EventLog,
    @Inject(CHECKPOINTS) checkpoints: CheckpointStore<null>,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    readiness: Readiness,
  ) {
    super({ checkpoint: 'council-outcome-outbox', categories: [COUNCIL_RUN_CATEGORY] }, log, checkpoints, nc, readiness);
  }

  protected async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    await ensureStream(jsm, {
      name: acpStreamNames(this.config.streamSuffix).councilOutcomes,
      subjects: [councilSubjects(this.config.councilPrefix).outcomes],
      replicas: this.config.logReplicas,
    });
  }

  protected async messagesFor({ event }: StoredEvent<CouncilEvent>): Promise<OutboxMessage[]> {
    if (event.type !== E.OutcomeRecorded) return [];
    const body: CouncilOutcomeMessage = {
      event_id: event.event_id,
      run_id: event.correlation_id,
      outcome_id: event.data.outcome_id,
      recorded_by: event.actor,
      recorded_at: event.occurred_at,
      structured: event.data.structured ?? null,
      summary: event.data.summary,
      source: event.data.source,
      evidence_refs: event.data.evidence_refs,
    };
    return [{ subject: councilSubjects(this.config.councilPrefix).outcomes, body, msgId: event.event_id }];
  }
}
