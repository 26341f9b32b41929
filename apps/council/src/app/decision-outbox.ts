import { Inject, Injectable, Logger } from '@nestjs/common';
import { COUNCIL_EVENT_TYPES as E, CouncilEvent, RunTerminated, ValueChoiceResolved } from '@conclave/council-protocol';
import { CheckpointStore, isAtOrBefore, StartFrom, StoredEvent } from '@conclave/event-log';
import { acpStreamNames, councilSubjects, ensureStream, publishJsonOnce } from '@conclave/messaging';
import { CHECKPOINTS, NATS_CONNECTION, SERVICE_CONFIG } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { CouncilConfig } from './council.config';
import { RunRepository } from './run-repository';

const CHECKPOINT = 'council-outbox';
const ATTEMPTS = 3;

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
 * Publishes from the log (an outbox): each RunTerminated, and each ValueChoiceResolved (the run's
 * terminal state after its owner's value choice), becomes one message on the JetStream stream
 * COUNCIL_DECISIONS (`<prefix>.v1.decisions`) carrying the DecisionRecord with its dissent,
 * `Nats-Msg-Id` = the event id, so a replay or a second replica never publishes it twice within
 * the duplicate window; the checkpoint keeps a restart from replaying older ones.
 */
@Injectable()
export class DecisionOutbox {
  private readonly logger = new Logger(DecisionOutbox.name);
  private checkpoint: StartFrom = 'start';
  private revision = 0;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(CHECKPOINTS) private readonly checkpoints: CheckpointStore<null>,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    private readonly repo: RunRepository,
  ) {}

  /** Creates the stream and loads the checkpoint; called by the run index before it subscribes. */
  async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    await ensureStream(jsm, {
      name: acpStreamNames(this.config.streamSuffix).councilDecisions,
      subjects: [councilSubjects(this.config.councilPrefix).decisions],
      replicas: this.config.logReplicas,
    });
    const stored = await this.checkpoints.load(CHECKPOINT);
    this.checkpoint = stored?.position ?? 'start';
    this.revision = stored?.revision ?? 0;
  }

  async observe({ event, position }: StoredEvent<CouncilEvent>): Promise<void> {
    if ((event.type !== E.RunTerminated && event.type !== E.ValueChoiceResolved) || isAtOrBefore(position, this.checkpoint)) return;
    const { state } = await this.repo.load(event.correlation_id);
    if (state.status !== 'terminated') return;
    const message: CouncilDecisionMessage =
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
    const subject = councilSubjects(this.config.councilPrefix).decisions;
    for (let attempt = 1; ; attempt++) {
      try {
        await publishJsonOnce(this.nc.jetstream(), subject, message, event.event_id);
        break;
      } catch (err) {
        if (attempt >= ATTEMPTS) throw err;
      }
    }
    this.checkpoint = position;
    try {
      this.revision = await this.checkpoints.save(CHECKPOINT, { position, state: null }, this.revision);
    } catch (err) {
      // Another replica moved it: reload; republishing is deduplicated anyway.
      this.logger.warn(`outbox checkpoint not saved: ${(err as Error).message}`);
      this.revision = (await this.checkpoints.load(CHECKPOINT))?.revision ?? this.revision;
    }
  }
}
