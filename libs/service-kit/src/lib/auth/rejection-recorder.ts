import { Inject, Injectable, Logger } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import type { EventLog, LogEvent } from '@conclave/event-log';
import { AUTH_HEADERS } from '@conclave/registry-protocol';
import type { Clock, IdGenerator } from '../runtime';
import { CLOCK, EVENT_LOG, IDS } from '../tokens';
import { sha256Hex } from './crypto';
import type { CommandRequest, Identity } from './identity';

/** The stream that holds rejected commands, for the audit service (category `audit`). */
export const REJECTIONS_STREAM = 'audit-rejections';
export const COMMAND_REJECTED = 'CommandRejected';

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
 * Records every refused command (RFC 14.6: the audit log holds rejections too) by appending a
 * CommandRejected event to the `audit-rejections` stream of the event log, where the audit
 * service reads it in the same global order as every other event. A failure to record is
 * logged and never changes the reply.
 */
@Injectable()
export class RejectionRecorder {
  private readonly logger = new Logger(RejectionRecorder.name);

  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog<LogEvent>,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
  ) {}

  async record(command: string, request: CommandRequest | undefined, body: unknown, error: AcpError, identity?: Identity): Promise<void> {
    const claimed = request?.getHeaders()?.get(AUTH_HEADERS.participant) || undefined;
    const declared = declaredActorOf(body);
    const proposalId = typeof (body as Record<string, unknown>)?.['proposal_id'] === 'string' ? ((body as Record<string, string>)['proposal_id']) : null;
    const id = this.ids.next();
    const event: CommandRejected = {
      event_id: id,
      type: COMMAND_REJECTED,
      schema_version: 1,
      occurred_at: this.clock.now().toISOString(),
      actor: (identity?.participant_id ?? claimed ?? declared ?? 'anonymous').slice(0, 256),
      causation_id: id,
      correlation_id: proposalId ?? id,
      data: {
        command,
        subject: request?.getSubject() ?? command,
        proposal_id: proposalId,
        authenticated: identity?.via === 'signature',
        body_hash: request ? sha256Hex(request.getRawBody()) : null,
        error: error.toJSON(),
      },
    };
    try {
      await this.log.append(REJECTIONS_STREAM, [event], 'any');
    } catch (err) {
      this.logger.error(`could not record the rejection of ${command}: ${(err as Error).message}`);
    }
  }
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
