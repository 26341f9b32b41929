import { createHash } from 'node:crypto';
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
      error:
        error.field === undefined
          ? { code: error.code, message: error.message }
          : { code: error.code, message: error.message, field: error.field },
      authenticated: data['authenticated'] === true,
    };
  }
  if (proposalId && typeof data['payload_hash'] === 'string' && !payloadHashes.has(proposalId)) {
    payloadHashes.set(proposalId, data['payload_hash'] as string);
  }
  return { ...base, action: event.type, outcome: 'recorded', payload_hash: proposalId ? (payloadHashes.get(proposalId) ?? null) : null };
}

const MAX_ID = 128;
const MAX_MESSAGE = 1024;
const HEX64 = /^[0-9a-f]{64}$/;

const boundedString = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

/**
 * A message of the rejections stream as the audit log records it. Whatever its content, it is a
 * rejection (`CommandRejected`, so `outcome: rejected`: nobody can enter `recorded` through this
 * feed). A message that is not a well-formed, bounded rejection record is not dropped silently
 * and does not stop the feed: it becomes a `rejected:malformed-record` entry holding the hash of
 * its bytes and what was wrong, so the attempt itself is on the chain.
 */
export function rejectionEventOf(data: Uint8Array, seq: number, receivedAt: string): AuditedEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
  } catch {
    return malformed(data, seq, receivedAt, 'not UTF-8 JSON');
  }
  const problem = rejectionProblem(parsed);
  if (problem) return malformed(data, seq, receivedAt, problem);
  const e = parsed as Required<AuditedEvent> & { data: Record<string, unknown> };
  const error = e.data['error'] as { code: string; message: string; field?: string };
  return {
    event_id: e.event_id,
    type: REJECTED,
    occurred_at: e.occurred_at,
    actor: e.actor,
    data: {
      command: e.data['command'],
      proposal_id: e.data['proposal_id'] ?? null,
      authenticated: e.data['authenticated'],
      body_hash: e.data['body_hash'] ?? null,
      error: { code: error.code, message: error.message, ...(error.field !== undefined ? { field: error.field } : {}) },
    },
  };
}

function rejectionProblem(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'not a JSON object';
  const e = v as Record<string, unknown>;
  if (e['type'] !== REJECTED) return `type is not ${REJECTED}`;
  if (!boundedString(e['event_id'], MAX_ID)) return 'event_id missing or too long';
  if (!boundedString(e['actor'], MAX_ID)) return 'actor missing or too long';
  if (!boundedString(e['occurred_at'], 40) || Number.isNaN(Date.parse(e['occurred_at']))) return 'occurred_at is not a timestamp';
  const d = e['data'] as Record<string, unknown> | undefined;
  if (typeof d !== 'object' || d === null) return 'data missing';
  if (!boundedString(d['command'], MAX_ID)) return 'data.command missing or too long';
  if (d['proposal_id'] !== null && d['proposal_id'] !== undefined && !boundedString(d['proposal_id'], MAX_ID))
    return 'data.proposal_id too long';
  if (typeof d['authenticated'] !== 'boolean') return 'data.authenticated is not a boolean';
  if (d['body_hash'] !== null && d['body_hash'] !== undefined && !(typeof d['body_hash'] === 'string' && HEX64.test(d['body_hash'])))
    return 'data.body_hash is not a SHA-256';
  const err = d['error'] as Record<string, unknown> | undefined;
  if (
    typeof err !== 'object' ||
    err === null ||
    !boundedString(err['code'], 64) ||
    typeof err['message'] !== 'string' ||
    err['message'].length > MAX_MESSAGE
  )
    return 'data.error malformed';
  if (err['field'] !== undefined && !boundedString(err['field'], MAX_ID)) return 'data.error.field malformed';
  return undefined;
}

function malformed(data: Uint8Array, seq: number, receivedAt: string, why: string): AuditedEvent {
  return {
    event_id: `malformed-rejection-${seq}`,
    type: REJECTED,
    occurred_at: receivedAt,
    actor: 'unknown',
    data: {
      command: 'malformed-record',
      proposal_id: null,
      authenticated: false,
      body_hash: createHash('sha256').update(data).digest('hex'),
      error: { code: 'SCHEMA_VIOLATION', message: `message ${seq} of the rejections stream is not a rejection record: ${why}` },
    },
  };
}
