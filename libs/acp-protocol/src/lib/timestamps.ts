/**
 * Spec 12.1: timestamps are ISO 8601 with UTC timezone, `Z` or `+00:00` only. Parsing is pure
 * (`new Date(string)` would also be pure, but accepts far more than the spec allows).
 */
const UTC_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|\+00:00)$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** Nanoseconds since the epoch, or undefined when `value` is not a valid spec timestamp. */
export function utcInstant(value: unknown): bigint | undefined {
  if (typeof value !== 'string') return undefined;
  const m = UTC_TIMESTAMP.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return undefined;
  const dim = mo === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[mo - 1];
  if (d < 1 || d > dim) return undefined;
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const nanos = BigInt((m[7] ?? '').padEnd(9, '0'));
  return BigInt(ms) * 1_000_000n + nanos;
}

export function isUtcTimestamp(value: unknown): value is string {
  return utcInstant(value) !== undefined;
}

/** Nanoseconds of a timestamp already validated; throws RangeError otherwise (a programming error). */
export function instantOf(value: string): bigint {
  const t = utcInstant(value);
  if (t === undefined) throw new RangeError(`not a UTC timestamp: ${value}`);
  return t;
}

/** ISO string of an instant in nanoseconds, with millisecond precision (for computed deadlines). */
export function isoFromInstant(nanos: bigint): string {
  const ms = nanos / 1_000_000n;
  const rest = nanos % 1_000_000n;
  const base = new Date(Number(ms)).toISOString();
  return rest === 0n ? base : base.replace('Z', `${rest.toString().padStart(6, '0')}Z`);
}
