import { AcpError } from './errors';

/**
 * ULIDs (spec 12.1): 26 characters of Crockford base32, a 48-bit time (10 chars) then 80 random
 * bits (16 chars). Only the canonical upper-case form is accepted, so that ids compare as plain
 * strings everywhere (dedup keys, stream names). The first character is at most '7' because
 * 26 base32 characters hold 130 bits and a ULID has 128.
 */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const RANDOM_CHARS = 16;
const RANDOM_MODULUS = 1n << 80n;

export function isUlid(value: unknown): value is string {
  return typeof value === 'string' && ULID_PATTERN.test(value);
}

/** Throws INVALID_ID naming `field` unless `value` is a canonical ULID. */
export function assertUlid(value: unknown, field: string): asserts value is string {
  if (!isUlid(value)) {
    throw new AcpError('INVALID_ID', `${field} must be a ULID (26 upper-case Crockford base32 characters)`, field);
  }
}

function decodeBase32(chars: string): bigint {
  let n = 0n;
  for (const c of chars) n = (n << 5n) | BigInt(CROCKFORD.indexOf(c));
  return n;
}

function encodeBase32(n: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

/**
 * The id of the k-th event produced by a command (DESIGN section 3, STYLE "What we take" 2):
 * same 48-bit time as the command id, random part = the command's random part + k (mod 2^80,
 * so it never throws on a random value near the top). A redelivered command therefore yields
 * byte-identical events, and the log's dedup by event id makes the retry harmless.
 *
 * The decider numbers a command's events from k = 1, so no event shares its command's id.
 * Command ids must come from a NON-monotonic generator (the `ulid` package's `ulid()`, not
 * `monotonicFactory()`): a monotonic generator gives ids whose random parts differ by 1, whose
 * derived event ids would collide.
 */
export function deriveEventId(commandId: string, k: number): string {
  assertUlid(commandId, 'command_id');
  if (!Number.isSafeInteger(k) || k < 0) {
    throw new AcpError('SCHEMA_VIOLATION', 'event index k must be a non-negative safe integer', 'k');
  }
  const time = commandId.slice(0, 10);
  const random = decodeBase32(commandId.slice(10));
  return time + encodeBase32((random + BigInt(k)) % RANDOM_MODULUS, RANDOM_CHARS);
}
