/**
 * The audit log's hash chain (RFC 14.6), pure: the hash function is an input (the services and
 * the CLI pass SHA-256). Each entry's hash covers its canonical JSON without the `hash` member,
 * including `seq` and `prev_hash`, so an entry cannot be modified, removed, inserted or moved
 * without breaking the chain at that point.
 */
import { canonicalJson } from '@conclave/acp-protocol';

export type HashFunction = (text: string) => string;

/** prev_hash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

export interface AuditEntryContent {
  /** Who acted: the authenticated participant (or the declared one when auth is off, or a service). */
  actor: string;
  /** The event type (`ProposalSubmitted`...) or, for a refused command, `rejected:<command>`. */
  action: string;
  outcome: 'recorded' | 'rejected';
  proposal_id: string | null;
  /** When it happened (the event's occurred_at; the rejection's time). */
  timestamp: string;
  /** SHA-256 of the proposal payload's canonical JSON, or of a rejected request's body bytes. */
  payload_hash: string | null;
  /** The log stream and event id it comes from. */
  stream: string;
  source_id: string;
  /** The source event's position in the log (where the audit service resumes after a restart). */
  position?: string;
  /** Rejections: the error code and message. */
  error?: { code: string; message: string; field?: string };
  /**
   * Rejections: whether `actor` had been authenticated (signature, JWT or token) before the
   * refusal, or was only claimed by the request. Absent on entries written before it existed.
   */
  authenticated?: boolean;
}

export interface AuditEntry extends AuditEntryContent {
  seq: number;
  prev_hash: string;
  hash: string;
}

export function entryHash(entry: Omit<AuditEntry, 'hash'>, hash: HashFunction): string {
  const { hash: _ignored, ...rest } = entry as AuditEntry;
  return hash(canonicalJson(rest));
}

/** The next entry after `previous` (undefined: the first). */
export function chainEntry(
  previous: Pick<AuditEntry, 'seq' | 'hash'> | undefined,
  content: AuditEntryContent,
  hash: HashFunction,
): AuditEntry {
  const unhashed = { ...content, seq: (previous?.seq ?? 0) + 1, prev_hash: previous?.hash ?? GENESIS_HASH };
  return { ...unhashed, hash: entryHash(unhashed, hash) };
}

export type ChainBreak = 'modified' | 'broken-link' | 'out-of-sequence' | 'malformed' | 'head-mismatch';

export type VerifyResult =
  | { ok: true; entries: number; head: string }
  | { ok: false; index: number; seq: number | null; problem: ChainBreak; message: string };

export interface VerifyOptions {
  /** The head hash obtained independently (e.g. `conclave audit head`): catches a truncated tail. */
  expectedHead?: string;
}

function isEntry(value: unknown): value is AuditEntry {
  const e = value as Record<string, unknown>;
  return (
    typeof e === 'object' &&
    e !== null &&
    Number.isSafeInteger(e['seq']) &&
    typeof e['prev_hash'] === 'string' &&
    typeof e['hash'] === 'string' &&
    typeof e['actor'] === 'string' &&
    typeof e['action'] === 'string'
  );
}

/**
 * Walks the chain from the genesis and reports the first entry (0-based index in the input, and
 * its seq) where it breaks:
 * - `modified`: the entry's content no longer matches its own hash;
 * - `broken-link`: its prev_hash is not the previous entry's hash (an entry before it was
 *   removed, inserted or moved, or rewritten together with its hash);
 * - `out-of-sequence`: seq does not follow (1, 2, 3...);
 * - `head-mismatch`: the chain is intact but does not end at the expected head (a cut tail).
 */
export function verifyChain(entries: readonly unknown[], hash: HashFunction, options: VerifyOptions = {}): VerifyResult {
  let prevHash = GENESIS_HASH;
  let prevSeq = 0;
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index];
    if (!isEntry(entry)) return { ok: false, index, seq: null, problem: 'malformed', message: 'not an audit entry' };
    if (entryHash(entry, hash) !== entry.hash) {
      return { ok: false, index, seq: entry.seq, problem: 'modified', message: 'content does not match its hash' };
    }
    if (entry.prev_hash !== prevHash) {
      return { ok: false, index, seq: entry.seq, problem: 'broken-link', message: 'prev_hash is not the hash of the entry before it' };
    }
    if (entry.seq !== prevSeq + 1) {
      return { ok: false, index, seq: entry.seq, problem: 'out-of-sequence', message: `seq ${entry.seq} follows ${prevSeq}` };
    }
    prevHash = entry.hash;
    prevSeq = entry.seq;
  }
  if (options.expectedHead !== undefined && options.expectedHead !== prevHash) {
    return {
      ok: false,
      index: entries.length,
      seq: null,
      problem: 'head-mismatch',
      message: 'the chain does not end at the expected head: entries are missing at the end',
    };
  }
  return { ok: true, entries: entries.length, head: prevHash };
}
