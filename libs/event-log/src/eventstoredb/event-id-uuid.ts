import { createHash } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Namespace for ids that are neither ULIDs nor UUIDs (RFC 4122 name-based, version 5).
const NAMESPACE = Buffer.from('6f1c3b7e2f5a4d0e9c8b1a2d3e4f5a6b', 'hex');

/**
 * EventStoreDB event ids must be UUIDs, and deduplicates retries by them: the id must be a pure
 * function of our event_id. A ULID is 128 bits, written as a UUID unchanged (so it round-trips and
 * keeps its time order); a UUID stays as is; anything else is hashed (UUIDv5 style).
 */
export function eventIdToUuid(eventId: string): string {
  if (ULID.test(eventId)) return formatUuid(ulidToBytes(eventId));
  if (UUID.test(eventId)) return eventId.toLowerCase();
  const bytes = createHash('sha1').update(NAMESPACE).update(eventId, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return formatUuid(bytes);
}

/** The inverse for ULIDs: the ULID whose bits a UUID holds. */
export function uuidToUlid(uuid: string): string {
  let n = BigInt(`0x${uuid.replace(/-/g, '')}`);
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

function ulidToBytes(ulid: string): Buffer {
  let n = 0n;
  for (const ch of ulid.toUpperCase()) n = (n << 5n) | BigInt(CROCKFORD.indexOf(ch));
  return Buffer.from(n.toString(16).padStart(32, '0'), 'hex');
}

function formatUuid(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
