import type { AuditEntryContent } from '@conclave/registry-protocol';

/** The action of the entry that marks a rejections stream made again (deleted and created anew). */
export const REJECTIONS_STREAM_RECREATED = 'RejectionsStreamRecreated';

/** What identifies an audited rejection record: the same message gives the same values. */
type RecordIdentity = Pick<AuditEntryContent, 'source_id' | 'action' | 'actor' | 'payload_hash'>;

/** The last entry of the chain that came from the rejections stream (a record or a recreation marker). */
export type RejectionsCheckpoint = RecordIdentity & Pick<AuditEntryContent, 'position'>;

export type RejectionsResume =
  | { recreated: false; from: number }
  /** The stream is not the one the chain followed: audit it from its start, after a marker entry. */
  | { recreated: true; from: 1; reason: string };

/**
 * Where the audit service resumes the rejections stream, and whether that stream is still the one
 * whose records the chain holds. A stream deleted and created again numbers its messages from 1
 * again, so resuming after the last audited sequence would skip the new stream's first records.
 * It is the same stream when the message at the last audited sequence is still the record that
 * was audited there; it is another one when that sequence is beyond its end, or holds another
 * record. A sequence removed since (a purge, an age limit) proves nothing either way: the same
 * stream is assumed, as nothing can tell it apart there.
 *
 * `atCheckpoint`: the message now stored at the checkpoint's sequence, read as an audit entry's
 * content; undefined when the stream has no message there.
 */
export function rejectionsResume(
  checkpoint: RejectionsCheckpoint | undefined,
  state: { first_seq: number; last_seq: number },
  atCheckpoint: RecordIdentity | undefined,
): RejectionsResume {
  const seq = Number(checkpoint?.position ?? 0);
  if (!checkpoint || !(seq > 0)) return { recreated: false, from: 1 };
  if (state.last_seq < seq) {
    return { recreated: true, from: 1, reason: `it ends at sequence ${state.last_seq}, before ${seq}, the last one audited` };
  }
  if (atCheckpoint && !sameRecord(checkpoint, atCheckpoint)) {
    return {
      recreated: true,
      from: 1,
      reason: `its sequence ${seq} holds ${atCheckpoint.source_id}, not ${checkpoint.source_id} that was audited there`,
    };
  }
  return { recreated: false, from: seq + 1 };
}

function sameRecord(a: RecordIdentity, b: RecordIdentity): boolean {
  return a.source_id === b.source_id && a.action === b.action && a.actor === b.actor && a.payload_hash === b.payload_hash;
}

/**
 * The chain entry recording that the rejections stream was made again: position 0, so that the
 * service resumes the new stream from its first message after a restart too; `source_id` names the
 * stream and its creation time, so that each recreation has an entry of its own.
 */
export function rejectionsRecreatedContent(stream: string, createdAt: string, at: string, actor: string): AuditEntryContent {
  return {
    actor,
    action: REJECTIONS_STREAM_RECREATED,
    outcome: 'recorded',
    proposal_id: null,
    timestamp: at,
    payload_hash: null,
    stream,
    source_id: `${stream}@${createdAt}`,
    position: '0',
  };
}

/**
 * Whether an entry's record id says which refusal it is, so that the same record met again (in a
 * stream made again, or published again after the duplicate window) is audited once: every record
 * but a malformed one, whose id is only its sequence, and the recreation marker.
 */
export function isIdentifiedRejection(entry: Pick<AuditEntryContent, 'action'>): boolean {
  return entry.action !== REJECTIONS_STREAM_RECREATED && entry.action !== 'rejected:malformed-record';
}
