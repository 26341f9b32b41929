import { createHash } from 'node:crypto';
import { canonicalJson, JsonObject } from '@conclave/acp-protocol';

/**
 * The hash a human resolution is bound to, computed at the edge when the proposal carries none:
 * the hex SHA-256 of the payload's canonical JSON (keys sorted at every level), the same
 * function the intake stamps proposals with (RFC 14.3/14.6).
 */
export function payloadHash(payload: JsonObject): string {
  return createHash('sha256').update(canonicalJson(payload), 'utf8').digest('hex');
}
