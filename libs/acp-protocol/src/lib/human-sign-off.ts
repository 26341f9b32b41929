/**
 * M-of-N human sign-off, a per-domain option of the escalation desk: the
 * escalated proposal resolves when `required` of the named humans agree on the same outcome;
 * with `veto`, any one of them rejecting rejects it at once. Pure: the sign-offs recorded so far
 * in, the decision out.
 */
import type { HumanOutcome } from './contracts';
import { AcpError } from './errors';
import type { HumanSignOffRecord } from './wire-format';

export interface SignOffRule {
  /** M: how many of the named humans must agree. */
  required: number;
  /** N: the humans whose sign-off counts. */
  of: string[];
  /** Whether any one of them rejecting rejects the proposal. */
  veto: boolean;
}

/** One human's sign-off, as recorded (EscalationSignedOff) and carried on the Resolution. */
export type HumanSignOff = HumanSignOffRecord;

export type SignOffDecision =
  | { kind: 'wait'; approvals: number; rejections: number; required: number }
  | { kind: 'resolve'; outcome: HumanOutcome; by: 'sign-off' | 'veto' };

/** What the sign-offs so far decide under the rule. */
export function signOffDecision(rule: SignOffRule, signOffs: readonly HumanSignOff[]): SignOffDecision {
  const counted = signOffs.filter((s) => rule.of.includes(s.by));
  const approvals = counted.filter((s) => s.outcome === 'approved').length;
  const rejections = counted.length - approvals;
  if (rule.veto && rejections > 0) return { kind: 'resolve', outcome: 'rejected', by: 'veto' };
  if (approvals >= rule.required) return { kind: 'resolve', outcome: 'approved', by: 'sign-off' };
  if (rejections >= rule.required) return { kind: 'resolve', outcome: 'rejected', by: 'sign-off' };
  return { kind: 'wait', approvals, rejections, required: rule.required };
}

// ---- configuration validation ----

function fail(field: string, message: string): never {
  throw new AcpError('SCHEMA_VIOLATION', `${field} ${message}`, field);
}

/** A list of distinct non-empty names (humans or teams). */
export function parseNameList(v: unknown, field: string, allowEmpty: boolean): string[] {
  if (!Array.isArray(v) || (!allowEmpty && v.length === 0))
    fail(field, allowEmpty ? 'must be an array of names' : 'must be a non-empty array of names');
  const list = v as unknown[];
  list.forEach((n, i) => {
    if (typeof n !== 'string' || n.length === 0 || n.length > 256) fail(`${field}.${i}`, 'must be a non-empty string');
  });
  if (new Set(list).size !== list.length) fail(field, 'must not repeat a name');
  return list as string[];
}

export function parseSignOffRule(v: unknown, field: string): SignOffRule {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(field, 'must be an object');
  const r = v as Record<string, unknown>;
  const of = parseNameList(r['of'], `${field}.of`, false);
  const required = r['required'];
  if (typeof required !== 'number' || !Number.isSafeInteger(required) || required < 1 || required > of.length) {
    fail(`${field}.required`, `must be an integer from 1 to the number of humans in of (${of.length})`);
  }
  const veto = r['veto'] ?? false;
  if (typeof veto !== 'boolean') fail(`${field}.veto`, 'must be a boolean');
  return { required, of, veto };
}
