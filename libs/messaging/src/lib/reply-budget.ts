import { AcpError } from '@conclave/acp-protocol';

const encoder = new TextEncoder();

/** Bytes of `value` as the JSON a reply carries. */
export function jsonBytes(value: unknown): number {
  return encoder.encode(JSON.stringify(value)).length;
}

/** Room kept in a reply for everything but the listed items (ok, cursors, head...). */
export const REPLY_ENVELOPE_BYTES = 1024;

/**
 * The longest prefix of `items` whose JSON fits in `maxReplyBytes` beside the reply's envelope:
 * list endpoints page by bytes as well as by count, so that a page never exceeds max_payload.
 * The first item is always taken (a single item too big for any page is then refused with
 * PAYLOAD_TOO_LARGE by the reply path, instead of a page that never advances).
 */
export function takeWithinBytes<T>(
  items: readonly T[],
  maxReplyBytes: number,
  envelopeBytes = REPLY_ENVELOPE_BYTES,
): { items: T[]; truncated: boolean } {
  const budget = maxReplyBytes - envelopeBytes;
  let used = 0;
  for (let i = 0; i < items.length; i++) {
    used += jsonBytes(items[i]) + 1;
    if (used > budget && i > 0) return { items: items.slice(0, i), truncated: true };
  }
  return { items: [...items], truncated: false };
}

/** Upper bounds on free text and ids a client may send, so nothing it stores can outgrow a reply. */
export const TEXT_LIMITS = {
  /** Proposal, escalation, participant and other ids as they travel in bodies. */
  id: 128,
  /** A response's reason, a resolution's note, an escalation's reason. */
  text: 4096,
} as const;

/**
 * SCHEMA_VIOLATION naming the first field of `body` that is a string longer than its limit. The
 * protocol's own parsers check shapes; this bounds sizes at the edge, before anything is stored.
 */
export function checkTextLengths(body: unknown, limits: Record<string, number>): void {
  if (typeof body !== 'object' || body === null) return;
  for (const [field, max] of Object.entries(limits)) {
    const v = (body as Record<string, unknown>)[field];
    if (typeof v === 'string' && v.length > max)
      throw new AcpError('SCHEMA_VIOLATION', `${field} is ${v.length} characters; at most ${max} are accepted`, field);
  }
}
