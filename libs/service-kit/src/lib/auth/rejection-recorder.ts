import { Inject, Injectable, Logger } from '@nestjs/common';
import type { LogEvent } from '@conclave/event-log';
import { ensureStream } from '@conclave/messaging';
import { AUTH_HEADERS, initialParticipantState } from '@conclave/registry-protocol';
import { NatsConnection } from 'nats';
import type { Clock, IdGenerator } from '../runtime';
import { ServiceConfig } from '../service-config';
import { CLOCK, IDS, NATS_CONNECTION, SERVICE_CONFIG } from '../tokens';
import { sha256Hex } from './crypto';
import type { CommandRequest, Identity } from './identity';
import { RateLimitedError } from './rate-limiter';

export const COMMAND_REJECTED = 'CommandRejected';

/**
 * Where refused commands are recorded: a JetStream stream beside the event log (never the log
 * itself: a refused command appends nothing to the log, DESIGN section 5).
 */
export function rejectionsStream(config: ServiceConfig): { stream: string; subject: string } {
  return { stream: `${config.eventStream}_REJECTIONS`, subject: `${config.eventSubjectPrefix}.audit.rejections` };
}

export interface CommandRejected extends LogEvent {
  type: typeof COMMAND_REJECTED;
  schema_version: 1;
  occurred_at: string;
  actor: string;
  causation_id: string;
  correlation_id: string;
  data: {
    command: string;
    subject: string;
    proposal_id: string | null;
    /** Whether `actor` was authenticated before the refusal, or only claimed. */
    authenticated: boolean;
    /** SHA-256 of the request body bytes. */
    body_hash: string | null;
    error: { code: string; message: string; field?: string };
  };
}

/**
 * Records every refused command (RFC 14.6: the audit log holds rejections too) by publishing a
 * CommandRejected record to the JetStream stream `<event stream>_REJECTIONS` (file storage,
 * deduplicated by record id), which the audit service consumes beside the event log. The event
 * log itself is untouched: a refused command appends nothing there. A failure to record is
 * logged and never changes the reply.
 */
@Injectable()
export class RejectionRecorder {
  private readonly logger = new Logger(RejectionRecorder.name);

  private ready: Promise<void> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
  ) {}

  async record(
    command: string,
    request: CommandRequest | undefined,
    body: unknown,
    error: TypedRefusal,
    identity?: Identity,
  ): Promise<void> {
    // A flood is audited by its first refusal, not one entry per message.
    if (error instanceof RateLimitedError && error.repeat) return;
    const claimed = request?.getHeaders()?.get(AUTH_HEADERS.participant) || undefined;
    const declared = declaredActorOf(body);
    const proposalId = boundedId((body as Record<string, unknown> | null)?.['proposal_id']);
    const id = this.ids.next();
    // Refused for its rate after its signature verified: who sent it is known, not only claimed.
    const verified = error instanceof RateLimitedError ? error.verifiedParticipant : undefined;
    const who: Identity | undefined =
      identity ?? (verified === undefined ? undefined : { participant_id: verified, via: 'signature', state: initialParticipantState });
    const event: CommandRejected = {
      event_id: id,
      type: COMMAND_REJECTED,
      schema_version: 1,
      occurred_at: this.clock.now().toISOString(),
      actor: (who?.participant_id ?? claimed ?? declared ?? 'anonymous').slice(0, MAX_ID),
      causation_id: id,
      correlation_id: proposalId ?? id,
      data: {
        command: command.slice(0, MAX_ID),
        subject: (request?.getSubject() ?? command).slice(0, MAX_SUBJECT),
        proposal_id: proposalId,
        authenticated: who !== undefined && who.via !== 'declared',
        body_hash: request ? sha256Hex(request.getRawBody()) : null,
        error: boundedError(error),
      },
    };
    const { stream, subject } = rejectionsStream(this.config);
    try {
      this.ready ??= this.nc
        .jetstreamManager()
        .then((jsm) => ensureStream(jsm, { name: stream, subjects: [subject], replicas: this.config.logReplicas }));
      await this.ready.catch((err: unknown) => {
        this.ready = undefined;
        throw err;
      });
      await this.nc.jetstream().publish(subject, new TextEncoder().encode(JSON.stringify(event)), { msgID: event.event_id });
    } catch (err) {
      this.logger.error(`could not record the rejection of ${command}: ${(err as Error).message}`);
    }
  }
}

/** Bounds on what a refused request may put in the audit log (it is client input). */
const MAX_ID = 128;
const MAX_SUBJECT = 256;
const MAX_MESSAGE = 1024;

function boundedId(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID ? value : null;
}

/**
 * A refusal with a stable code, as the ACP API (AcpError) and the Council library (CouncilError)
 * both put it on the wire: what an audit entry keeps of it.
 */
export interface TypedRefusal {
  toJSON(): { code: string; message: string; field?: string };
}

function boundedError(error: TypedRefusal): CommandRejected['data']['error'] {
  const { code, message, field } = error.toJSON();
  return { code, message: message.slice(0, MAX_MESSAGE), ...(field !== undefined ? { field: field.slice(0, MAX_ID) } : {}) };
}

const DECLARING_FIELDS = ['author', 'participant_id', 'requested_by', 'resolved_by'];

function declaredActorOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  for (const f of DECLARING_FIELDS) {
    const v = (body as Record<string, unknown>)[f];
    if (typeof v === 'string' && v.length > 0) return v;
  }
  return undefined;
}
