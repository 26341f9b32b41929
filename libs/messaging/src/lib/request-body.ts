import { AcpError } from '@conclave/acp-protocol';

// Fatal: JSON text is UTF-8 (RFC 8259 8.1); bytes that are not must never be stored as U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A request body as every NATS edge reads it, before anything else is done with it: no larger
 * than `maxPayloadBytes` (PAYLOAD_TOO_LARGE, not even parsed), UTF-8 JSON (INVALID_JSON), an
 * object (SCHEMA_VIOLATION: every request body of the API is one, DESIGN section 5).
 */
export function readRequestBody(data: Uint8Array, maxPayloadBytes: number): Record<string, unknown> {
  if (data.length > maxPayloadBytes) {
    throw new AcpError('PAYLOAD_TOO_LARGE', `request body is ${data.length} bytes; the limit is ${maxPayloadBytes}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(utf8.decode(data));
  } catch (err) {
    throw new AcpError('INVALID_JSON', `request body is not JSON: ${(err as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AcpError('SCHEMA_VIOLATION', 'request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
