import { CouncilError } from './errors';

/**
 * A small reader over `unknown` input. Each accessor names the field path it reads, so every
 * refusal says exactly which field is wrong. Hand-written rather than decorator-based so the
 * library stays free of reflection metadata and every artifact is a plain JSON value.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function fail(field: string, message: string): never {
  throw new CouncilError('SCHEMA_VIOLATION', message, field);
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function record(value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value)) fail(path === '' ? '(root)' : path, 'must be an object');
  return value;
}

export function str(obj: Record<string, unknown>, key: string, path: string): string {
  const v = obj[key];
  const field = join(path, key);
  if (typeof v !== 'string') fail(field, 'must be a string');
  if (v.trim() === '') fail(field, 'must not be empty');
  return v;
}

/**
 * The shapes of the blind references reviewers and the chair write (`anon-B-v1`, `review-2`,
 * `review-2#issue-1`): an artifact's own id may not take one, or it would be resolved in place of
 * the artifact the reference names (spec 11.1).
 */
const BLIND_REF = /^(?:anon-[A-Z]+-v\d+|review-\d+(?:#issue-\d+)?)$/;

/** A member-chosen artifact id: a non-empty string that is not shaped like a blind reference. */
export function artifactId(obj: Record<string, unknown>, key: string, path: string): string {
  const id = str(obj, key, path);
  if (BLIND_REF.test(id)) fail(join(path, key), 'must not have the shape of a blind reference (anon-X-vN, review-N)');
  return id;
}

export function optStr(obj: Record<string, unknown>, key: string, path: string): string | undefined {
  if (obj[key] === undefined || obj[key] === null) return undefined;
  return str(obj, key, path);
}

export function oneOf<T extends string>(obj: Record<string, unknown>, key: string, path: string, allowed: readonly T[]): T {
  const v = obj[key];
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    fail(join(path, key), `must be one of ${allowed.join(' | ')}`);
  }
  return v as T;
}

export function num(
  obj: Record<string, unknown>,
  key: string,
  path: string,
  opts: { min?: number; max?: number; integer?: boolean } = {},
): number {
  const v = obj[key];
  const field = join(path, key);
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(field, 'must be a finite number');
  if (opts.integer && !Number.isInteger(v)) fail(field, 'must be an integer');
  if (opts.min !== undefined && v < opts.min) fail(field, `must be >= ${opts.min}`);
  if (opts.max !== undefined && v > opts.max) fail(field, `must be <= ${opts.max}`);
  return v;
}

export function optNum(
  obj: Record<string, unknown>,
  key: string,
  path: string,
  opts: { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  if (obj[key] === undefined || obj[key] === null) return undefined;
  return num(obj, key, path, opts);
}

export function arr(
  obj: Record<string, unknown>,
  key: string,
  path: string,
  opts: { nonEmpty?: boolean; optional?: boolean } = {},
): unknown[] {
  const v = obj[key];
  const field = join(path, key);
  if (v === undefined && opts.optional) return [];
  if (!Array.isArray(v)) fail(field, 'must be an array');
  if (opts.nonEmpty && v.length === 0) fail(field, 'must not be empty');
  return v;
}

/** An array of non-empty strings. */
export function strings(
  obj: Record<string, unknown>,
  key: string,
  path: string,
  opts: { nonEmpty?: boolean; optional?: boolean } = {},
): string[] {
  const items = arr(obj, key, path, opts);
  return items.map((item, i) => {
    const field = join(join(path, key), i);
    if (typeof item !== 'string') fail(field, 'must be a string');
    if (item.trim() === '') fail(field, 'must not be empty');
    return item;
  });
}

export function optBool(obj: Record<string, unknown>, key: string, path: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') fail(join(path, key), 'must be a boolean');
  return v;
}

/** A JSON deep copy: artifacts and state are plain JSON, and copying proves it. */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** ISO-8601 instant to epoch milliseconds; refuses anything Date cannot parse. */
export function instantMs(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) fail(field, 'must be an ISO-8601 date-time');
  return ms;
}

export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString();
}

/** Deterministic stable JSON (sorted keys) for fingerprints and equality. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
