/**
 * What an agent signs (RFC 14.1, 14.4), pure. The signature covers a fixed prefix, the subject,
 * the timestamp, the nonce, the participant id and the exact body bytes, so a signature cannot
 * be moved to another subject, another time, another participant or another body, and a
 * captured request cannot be replayed (the nonce is single-use within the freshness window,
 * and outside it the timestamp is stale). Crypto itself happens at the edge.
 */
import { isUtcTimestamp } from '@conclave/acp-protocol';

export const SIGNATURE_SCHEME = 'CONCLAVE-ED25519-V1';

const NONCE = /^[A-Za-z0-9_-]{16,128}$/;

export function isNonce(value: unknown): value is string {
  return typeof value === 'string' && NONCE.test(value);
}

export interface SignedFields {
  subject: string;
  timestamp: string;
  nonce: string;
  participant_id: string;
}

/** The bytes the Ed25519 signature is over: `<scheme>\n<subject>\n<timestamp>\n<nonce>\n<participant>\n<body>`. */
export function signingInput(fields: SignedFields, body: Uint8Array): Uint8Array {
  const head = new TextEncoder().encode(
    `${SIGNATURE_SCHEME}\n${fields.subject}\n${fields.timestamp}\n${fields.nonce}\n${fields.participant_id}\n`,
  );
  const out = new Uint8Array(head.length + body.length);
  out.set(head, 0);
  out.set(body, head.length);
  return out;
}

export type Freshness = { fresh: true; instantMs: number } | { fresh: false; reason: string };

/** A timestamp within `skewMs` of `nowMs`, either side (clocks drift both ways). */
export function checkFreshness(timestamp: string, nowMs: number, skewMs: number): Freshness {
  if (!isUtcTimestamp(timestamp)) return { fresh: false, reason: 'timestamp must be an ISO 8601 UTC instant' };
  const instantMs = Date.parse(timestamp);
  if (!Number.isFinite(instantMs)) return { fresh: false, reason: 'timestamp is not a valid instant' };
  const drift = instantMs - nowMs;
  if (Math.abs(drift) > skewMs) {
    return {
      fresh: false,
      reason: `timestamp is ${Math.abs(drift)} ms ${drift < 0 ? 'old' : 'in the future'}; the window is ${skewMs} ms`,
    };
  }
  return { fresh: true, instantMs };
}
