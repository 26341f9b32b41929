import type { StoredEvent } from '@conclave/event-log';
import type { AuditEntryContent } from '@conclave/registry-protocol';

/** The fields of a log event the audit log reads; everything else is the event's own business. */
interface AuditedEvent {
  event_id: string;
  type: string;
  occurred_at?: string;
  actor?: string;
  data?: Record<string, unknown>;
}

const REJECTED = 'CommandRejected';

/**
 * One audit entry's content from one log event (RFC 14.6: actor, action, proposal id,
 * timestamp, payload hash). `payloadHashes` remembers each proposal's payload hash from its
 * submission, so that every later entry of the proposal (responses, resolution) carries it.
 */
export function auditContentOf(stored: StoredEvent, payloadHashes: Map<string, string>): AuditEntryContent {
  const event = stored.event as AuditedEvent;
  const data = event.data ?? {};
  const proposalId = typeof data['proposal_id'] === 'string' ? (data['proposal_id'] as string) : null;
  const base = {
    actor: event.actor ?? 'unknown',
    proposal_id: proposalId,
    timestamp: event.occurred_at ?? '',
    stream: stored.stream,
    source_id: event.event_id,
    position: stored.position,
  };
  if (event.type === REJECTED) {
    const error = data['error'] as { code: string; message: string; field?: string };
    return {
      ...base,
      action: `rejected:${String(data['command'])}`,
      outcome: 'rejected',
      payload_hash: typeof data['body_hash'] === 'string' ? (data['body_hash'] as string) : null,
      error: error.field === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, field: error.field },
    };
  }
  if (proposalId && typeof data['payload_hash'] === 'string' && !payloadHashes.has(proposalId)) {
    payloadHashes.set(proposalId, data['payload_hash'] as string);
  }
  return { ...base, action: event.type, outcome: 'recorded', payload_hash: proposalId ? (payloadHashes.get(proposalId) ?? null) : null };
}
