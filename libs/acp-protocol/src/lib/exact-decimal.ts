/**
 * Exact decimal arithmetic for votes (DESIGN section 2). A float sum cannot decide a tie
 * (0.1 + 0.2 !== 0.3), so each factor is taken as the decimal it was written as (its shortest
 * round-trip form, `String(x)`), and products and sums are exact: value = units / 10^scale.
 */
export interface ExactDecimal {
  readonly units: bigint;
  readonly scale: number;
}

export const ZERO: ExactDecimal = { units: 0n, scale: 0 };
export const ONE: ExactDecimal = { units: 1n, scale: 0 };

const POW10: bigint[] = [1n];
function pow10(n: number): bigint {
  for (let i = POW10.length; i <= n; i++) POW10.push(POW10[i - 1] * 10n);
  return POW10[n];
}

const NUMBER_FORM = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

/** The exact value of the shortest round-trip decimal of a finite number. */
export function decimalFromNumber(x: number): ExactDecimal {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  const m = NUMBER_FORM.exec(String(x));
  /* istanbul ignore next: String() of a finite number always matches */
  if (!m) throw new RangeError(`unexpected number form: ${String(x)}`);
  return decimalFromNumberParts(m[1], m[2], m[3] ?? '', m[4] ?? '0');
}

/** Exact decimal parse of a plain decimal string such as "0.6885" (used by tests and thresholds). */
export function decimalFromString(s: string): ExactDecimal {
  const m = NUMBER_FORM.exec(s.trim());
  if (!m) throw new RangeError(`not a decimal: ${s}`);
  return decimalFromNumberParts(m[1], m[2], m[3] ?? '', m[4] ?? '0');
}

function decimalFromNumberParts(sign: string, int: string, frac: string, exp: string): ExactDecimal {
  let units = BigInt(int + frac);
  let scale = frac.length - Number(exp);
  if (scale < 0) {
    units *= pow10(-scale);
    scale = 0;
  }
  return { units: sign === '-' ? -units : units, scale };
}

export function multiply(a: ExactDecimal, b: ExactDecimal): ExactDecimal {
  return { units: a.units * b.units, scale: a.scale + b.scale };
}

export function add(a: ExactDecimal, b: ExactDecimal): ExactDecimal {
  if (a.scale === b.scale) return { units: a.units + b.units, scale: a.scale };
  return a.scale > b.scale
    ? { units: a.units + b.units * pow10(a.scale - b.scale), scale: a.scale }
    : { units: a.units * pow10(b.scale - a.scale) + b.units, scale: b.scale };
}

/** -1, 0 or 1, exactly. */
export function compare(a: ExactDecimal, b: ExactDecimal): -1 | 0 | 1 {
  const [x, y] =
    a.scale === b.scale
      ? [a.units, b.units]
      : a.scale > b.scale
        ? [a.units, b.units * pow10(a.scale - b.scale)]
        : [a.units * pow10(b.scale - a.scale), b.units];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Canonical decimal string ("0.6885", "1", "0"): trailing zeros stripped. */
export function toDecimalString(d: ExactDecimal): string {
  const negative = d.units < 0n;
  let digits = (negative ? -d.units : d.units).toString();
  let scale = d.scale;
  while (scale > 0 && digits.length > 1 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    scale--;
  }
  if (digits === '0') return '0';
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return negative ? `-${digits}` : digits;
}

/** The nearest JSON number (correctly rounded by the engine's decimal parser). */
export function toNumber(d: ExactDecimal): number {
  if (d.units === 0n) return 0;
  return Number(`${d.units}e-${d.scale}`);
}
