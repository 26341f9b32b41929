/**
 * Spec section 10: policy-defined escalation (10.1 item 3) as pure rules over the submitted
 * proposal, and the 10.3 metadata. The rules are configuration handed in by the service, never
 * read from the environment here.
 */
import { canonicalJson } from './canonical-json';
import { isWithinDomain } from './domain-scoped-resolution';
import { AcpError } from './errors';
import type { ProposalDetails } from './proposal.state';

/** A condition on a path of the proposal (`payload.env`, `domain`, `author`, `quorum`, ...). */
export type PolicyCondition =
  | { path: string; equals: unknown }
  | { path: string; in: readonly unknown[] }
  | { path: string; exists: boolean }
  | { all: readonly PolicyCondition[] }
  | { any: readonly PolicyCondition[] }
  | { not: PolicyCondition };

/**
 * "Escalate all proposals touching production systems":
 * `{id: 'prod-ops', domain_prefix: 'ops', when: {path: 'payload.env', equals: 'production'}}`.
 */
export interface EscalationPolicyRule {
  id: string;
  /** Segment-wise domain prefix ('ops' covers 'ops.deploy'); absent or '' covers every domain. */
  domain_prefix?: string;
  /** Absent: every proposal in scope escalates. */
  when?: PolicyCondition;
  /** Who is responsible for the human resolution (10.3). */
  assign_to?: string;
}

const MISSING = Symbol('missing');

function valueAt(subject: unknown, path: string): unknown {
  let v: unknown = subject;
  for (const key of path.split('.')) {
    if (typeof v !== 'object' || v === null || !Object.prototype.hasOwnProperty.call(v, key)) return MISSING;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && typeof b === 'object' && canonicalJson(a) === canonicalJson(b));
}

export function conditionHolds(condition: PolicyCondition, proposal: ProposalDetails): boolean {
  if ('all' in condition) return condition.all.every((c) => conditionHolds(c, proposal));
  if ('any' in condition) return condition.any.some((c) => conditionHolds(c, proposal));
  if ('not' in condition) return !conditionHolds(condition.not, proposal);
  const v = valueAt(proposal, condition.path);
  if ('exists' in condition) return (v !== MISSING) === condition.exists;
  if (v === MISSING) return false;
  if ('in' in condition) return condition.in.some((x) => sameJson(v, x));
  return sameJson(v, condition.equals);
}

/**
 * The first rule (in configuration order) that escalates this proposal before voting, if any.
 * Rules apply to entries of type `proposal` only: observations and hypotheses need no consensus
 * (4.2) and auto-resolve.
 */
export function matchEscalationPolicy(rules: readonly EscalationPolicyRule[], proposal: ProposalDetails): EscalationPolicyRule | undefined {
  return rules.find(
    (r) =>
      isWithinDomain(proposal.domain, r.domain_prefix ?? '') &&
      proposal.type === 'proposal' &&
      (r.when === undefined || conditionHolds(r.when, proposal)),
  );
}

// ---- config validation: a bad rule is refused at service start, naming the field ----

function fail(field: string, message: string): never {
  throw new AcpError('SCHEMA_VIOLATION', `${field} ${message}`, field);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseCondition(v: unknown, field: string, depth: number): PolicyCondition {
  if (depth > 16) fail(field, 'nests too deeply');
  if (!isRecord(v)) fail(field, 'must be an object');
  if ('all' in v || 'any' in v) {
    const key = 'all' in v ? 'all' : 'any';
    const list = v[key];
    if (!Array.isArray(list) || list.length === 0) fail(`${field}.${key}`, 'must be a non-empty array');
    const parsed = list.map((c, i) => parseCondition(c, `${field}.${key}.${i}`, depth + 1));
    return key === 'all' ? { all: parsed } : { any: parsed };
  }
  if ('not' in v) return { not: parseCondition(v['not'], `${field}.not`, depth + 1) };
  const path = v['path'];
  if (typeof path !== 'string' || !/^[^.]+(\.[^.]+)*$/.test(path)) fail(`${field}.path`, 'must be a dotted path such as payload.env');
  if ('equals' in v) return { path, equals: v['equals'] };
  if ('in' in v) {
    if (!Array.isArray(v['in'])) fail(`${field}.in`, 'must be an array');
    return { path, in: [...(v['in'] as unknown[])] };
  }
  if ('exists' in v) {
    if (typeof v['exists'] !== 'boolean') fail(`${field}.exists`, 'must be a boolean');
    return { path, exists: v['exists'] as boolean };
  }
  return fail(field, 'must have one of equals, in, exists, all, any, not');
}

/** Validates escalation policy configuration (e.g. parsed from a JSON config value). */
export function parseEscalationPolicies(config: unknown): EscalationPolicyRule[] {
  if (!Array.isArray(config)) fail('escalation_policies', 'must be an array of rules');
  const seen = new Set<string>();
  return config.map((r: unknown, i: number) => {
    const at = `escalation_policies.${i}`;
    if (!isRecord(r)) fail(at, 'must be an object');
    const id = r['id'];
    if (typeof id !== 'string' || id.length === 0) fail(`${at}.id`, 'must be a non-empty string');
    if (seen.has(id)) fail(`${at}.id`, `duplicates rule ${id}`);
    seen.add(id);
    const rule: EscalationPolicyRule = { id };
    if (r['domain_prefix'] !== undefined) {
      const p = r['domain_prefix'];
      if (typeof p !== 'string' || (p !== '' && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(p))) {
        fail(`${at}.domain_prefix`, 'must be a domain');
      }
      rule.domain_prefix = p;
    }
    if (r['when'] !== undefined) rule.when = parseCondition(r['when'], `${at}.when`, 0);
    if (r['assign_to'] !== undefined) {
      if (typeof r['assign_to'] !== 'string' || r['assign_to'].length === 0) fail(`${at}.assign_to`, 'must be a non-empty string');
      rule.assign_to = r['assign_to'];
    }
    return rule;
  });
}
