/**
 * Spec 18.1 and 18.2 as data: a domain's policy document names the quorum policies its proposals
 * may use (built-in kinds and declarative custom ones), the one used when a proposal names none,
 * the weight function, and the upper bound on weighted thresholds. Documents are versioned in
 * the log (`domain-policy-<domain>`), stamped on each proposal when it is submitted (so a
 * proposal is decided by the rules it was submitted under, and a replay of the log reproduces
 * every decision), and named in each decision event.
 */
import { canonicalJson } from './canonical-json';
import { BUILT_IN_QUORUM_POLICY_KINDS } from './contracts';
import { deriveEventId } from './ids';
import { AcpError } from './errors';
import { ExactDecimal, ONE, ZERO, add, compare, decimalFromNumber, multiply, toNumber } from './exact-decimal';
import { isDomain, isWithinDomain } from './domain-scoped-resolution';
import type { QuorumPolicySpec } from './wire-format';
import type { ComputedWeight, WeightFactors } from './weighted-voting';
import { clampFactor, computeWeight } from './weighted-voting';

export const DOMAIN_POLICY_SCHEMA_VERSION = '1.0' as const;
export const DOMAIN_POLICY_STREAM_CATEGORY = 'domain-policy' as const;
export const DOMAIN_POLICY_EVENT_TYPE = 'DomainPolicySet' as const;

/** The registry API's policy subjects, relative to the prefix (like the participant registry's). */
export const POLICY_PATTERNS = { set: 'v1.policies.set', get: 'v1.policies.get' } as const;

/**
 * The upper bound on a weighted threshold when the domain sets none: each response weighs at
 * most 1, so a threshold above the number of participants who will ever respond is never met,
 * and the proposal can only time out. 100 is far above any panel this service is built for.
 */
export const DEFAULT_MAX_WEIGHTED_THRESHOLD = 100;

const FACTORS = ['domain_authority', 'confidence', 'trust_score'] as const;
type Factor = (typeof FACTORS)[number];

/** 18.2: the 6.1 product with small integer exponents, or a convex combination of the factors. */
export type WeightFunctionSpec =
  | { kind: 'product'; exponents?: Partial<Record<Factor, number>> }
  | { kind: 'linear'; coefficients: Record<Factor, number> };

/** 18.1: a declarative quorum policy: met when every condition it states holds. */
export interface CustomQuorumPolicySpec {
  kind: string;
  description?: string;
  /** At least this many responses. */
  min_responses?: number;
  /** At least this total weight (for + against), exactly; at most the domain's bound. */
  min_total_weight?: number;
  /** Each of these participants has responded. */
  required_participants?: string[];
}

export interface DomainPolicyDocument {
  schema_version: typeof DOMAIN_POLICY_SCHEMA_VERSION;
  /** The domain it governs, and every domain under it that has no document of its own. */
  domain: string;
  /** 1 for the first document of a domain, then one more per change. */
  version: number;
  description?: string;
  /** Default: the 6.1 formula. */
  weight_function?: WeightFunctionSpec;
  /** The policy of a proposal that names none (default: count, 7.1). */
  default_quorum_policy?: QuorumPolicySpec;
  /** Custom kinds that proposals of the domain may name in `quorum_policy.kind`. */
  quorum_policies?: CustomQuorumPolicySpec[];
  /** Upper bound on weighted thresholds (default and ceiling: DEFAULT_MAX_WEIGHTED_THRESHOLD). */
  max_weighted_threshold?: number;
}

/** What a decision event names: which document decided it. */
export interface DomainPolicyRef {
  domain: string;
  version: number;
}

export function domainPolicyRef(p: DomainPolicyDocument): DomainPolicyRef {
  return { domain: p.domain, version: p.version };
}

/** Stream ids allow letters, digits and '_': the domain's characters are written as hex. */
export function domainPolicyStream(domain: string): string {
  let hex = '';
  for (const ch of domain) hex += ch.charCodeAt(0).toString(16).padStart(2, '0');
  return `${DOMAIN_POLICY_STREAM_CATEGORY}-${hex}`;
}

/** The domains whose documents could govern `domain`, most specific first: risk.credit, risk. */
export function governingDomains(domain: string): string[] {
  const parts = domain.split('.');
  return parts.map((_, i) => parts.slice(0, parts.length - i).join('.'));
}

/** The most specific document among `documents` that governs `domain`. */
export function policyFor(domain: string, documents: Iterable<DomainPolicyDocument>): DomainPolicyDocument | undefined {
  let best: DomainPolicyDocument | undefined;
  for (const d of documents) {
    if (isWithinDomain(domain, d.domain) && (!best || d.domain.length > best.domain.length)) best = d;
  }
  return best;
}

// ---- validation ----

const KIND = /^[a-z][a-z0-9-]{0,39}$/;
const fail = (message: string, field: string): never => {
  throw new AcpError('SCHEMA_VIOLATION', message, field);
};
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function only(o: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const k of Object.keys(o))
    if (!allowed.includes(k)) fail(`${at ? `${at}.` : ''}${k} is not a field of a policy document`, at ? `${at}.${k}` : k);
}

function parseWeightFunction(v: unknown): WeightFunctionSpec {
  if (!isObject(v)) return fail('weight_function must be an object', 'weight_function');
  if (v['kind'] === 'product') {
    only(v, ['kind', 'exponents'], 'weight_function');
    if (v['exponents'] === undefined) return { kind: 'product' };
    const e = v['exponents'];
    if (!isObject(e)) return fail('weight_function.exponents must be an object', 'weight_function.exponents');
    only(e, FACTORS, 'weight_function.exponents');
    const exponents: Partial<Record<Factor, number>> = {};
    for (const f of FACTORS) {
      if (e[f] === undefined) continue;
      const n = e[f];
      if (!Number.isInteger(n) || (n as number) < 0 || (n as number) > 3)
        fail(`weight_function.exponents.${f} must be an integer from 0 to 3`, `weight_function.exponents.${f}`);
      exponents[f] = n as number;
    }
    return { kind: 'product', exponents };
  }
  if (v['kind'] === 'linear') {
    only(v, ['kind', 'coefficients'], 'weight_function');
    const c = v['coefficients'];
    if (!isObject(c)) return fail('weight_function.coefficients must name each factor', 'weight_function.coefficients');
    only(c, FACTORS, 'weight_function.coefficients');
    let sum: ExactDecimal = ZERO;
    const coefficients = {} as Record<Factor, number>;
    for (const f of FACTORS) {
      const n = c[f];
      if (!isFiniteNumber(n) || n < 0 || n > 1)
        fail(`weight_function.coefficients.${f} must be a number in [0, 1]`, `weight_function.coefficients.${f}`);
      coefficients[f] = n as number;
      sum = add(sum, decimalFromNumber(n as number));
    }
    // Coefficients summing to exactly 1 keep the weight in [0, 1] (18.2) without clamping.
    if (compare(sum, ONE) !== 0) fail('weight_function.coefficients must sum to exactly 1', 'weight_function.coefficients');
    return { kind: 'linear', coefficients };
  }
  return fail('weight_function.kind must be product or linear', 'weight_function.kind');
}

function checkThreshold(t: unknown, bound: number, field: string): number {
  if (!isFiniteNumber(t) || t <= 0) fail(`${field} must be a number > 0`, field);
  if ((t as number) > bound) fail(`${field} ${t} is above the upper bound on weighted thresholds (${bound})`, field);
  return t as number;
}

function parseCustomPolicy(v: unknown, i: number, bound: number): CustomQuorumPolicySpec {
  const at = `quorum_policies.${i}`;
  if (!isObject(v)) return fail(`${at} must be an object`, at);
  only(v, ['kind', 'description', 'min_responses', 'min_total_weight', 'required_participants'], at);
  const kind = v['kind'];
  if (typeof kind !== 'string' || !KIND.test(kind))
    return fail(`${at}.kind must be 1 to 40 of a-z, 0-9, - starting with a letter`, `${at}.kind`);
  if ((BUILT_IN_QUORUM_POLICY_KINDS as readonly string[]).includes(kind))
    fail(`${at}.kind ${kind} is built in and cannot be redefined (17.3)`, `${at}.kind`);
  const spec: CustomQuorumPolicySpec = { kind };
  if (v['description'] !== undefined) {
    if (typeof v['description'] !== 'string' || v['description'].length > 500)
      fail(`${at}.description must be a string of at most 500 characters`, `${at}.description`);
    spec.description = v['description'] as string;
  }
  if (v['min_responses'] !== undefined) {
    const n = v['min_responses'];
    if (!Number.isSafeInteger(n) || (n as number) < 1) fail(`${at}.min_responses must be an integer >= 1`, `${at}.min_responses`);
    spec.min_responses = n as number;
  }
  if (v['min_total_weight'] !== undefined) spec.min_total_weight = checkThreshold(v['min_total_weight'], bound, `${at}.min_total_weight`);
  if (v['required_participants'] !== undefined) {
    const r = v['required_participants'];
    if (!Array.isArray(r) || r.length === 0 || r.length > 100 || !r.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 60))
      fail(`${at}.required_participants must be 1 to 100 participant ids`, `${at}.required_participants`);
    if (new Set(r as string[]).size !== (r as string[]).length)
      fail(`${at}.required_participants must not repeat an id`, `${at}.required_participants`);
    spec.required_participants = [...(r as string[])];
  }
  if (spec.min_responses === undefined && spec.min_total_weight === undefined && spec.required_participants === undefined) {
    fail(`${at} states no condition (min_responses, min_total_weight, required_participants): it would be met at once`, at);
  }
  return spec;
}

/**
 * A policy document from untrusted input (the registry API, a file for `conclave replay`), or an
 * AcpError SCHEMA_VIOLATION naming the field. Everything a proposal will be decided by is checked
 * here, once, so that a recorded document is always usable.
 */
export function parseDomainPolicy(input: unknown): DomainPolicyDocument {
  if (!isObject(input)) return fail('a policy document must be a JSON object', '');
  only(
    input,
    [
      'schema_version',
      'domain',
      'version',
      'description',
      'weight_function',
      'default_quorum_policy',
      'quorum_policies',
      'max_weighted_threshold',
    ],
    '',
  );
  if (input['schema_version'] !== DOMAIN_POLICY_SCHEMA_VERSION) {
    throw new AcpError('UNSUPPORTED_SCHEMA_VERSION', `policy schema_version must be "${DOMAIN_POLICY_SCHEMA_VERSION}"`, 'schema_version');
  }
  if (!isDomain(input['domain'])) fail('domain must be a domain name ([A-Za-z0-9_-] segments joined by .)', 'domain');
  const version = input['version'];
  if (!Number.isSafeInteger(version) || (version as number) < 1) fail('version must be an integer >= 1', 'version');
  const doc: DomainPolicyDocument = {
    schema_version: DOMAIN_POLICY_SCHEMA_VERSION,
    domain: input['domain'] as string,
    version: version as number,
  };
  if (input['description'] !== undefined) {
    if (typeof input['description'] !== 'string' || input['description'].length > 2000)
      fail('description must be a string of at most 2000 characters', 'description');
    doc.description = input['description'] as string;
  }
  let bound = DEFAULT_MAX_WEIGHTED_THRESHOLD;
  if (input['max_weighted_threshold'] !== undefined) {
    bound = checkThreshold(input['max_weighted_threshold'], DEFAULT_MAX_WEIGHTED_THRESHOLD, 'max_weighted_threshold');
    doc.max_weighted_threshold = bound;
  }
  if (input['weight_function'] !== undefined) doc.weight_function = parseWeightFunction(input['weight_function']);
  if (input['quorum_policies'] !== undefined) {
    const list = input['quorum_policies'];
    if (!Array.isArray(list) || list.length > 20) fail('quorum_policies must be an array of at most 20 policies', 'quorum_policies');
    doc.quorum_policies = (list as unknown[]).map((p, i) => parseCustomPolicy(p, i, bound));
    const kinds = doc.quorum_policies.map((p) => p.kind);
    if (new Set(kinds).size !== kinds.length) fail('quorum_policies must not define a kind twice', 'quorum_policies');
  }
  if (input['default_quorum_policy'] !== undefined) {
    const d = input['default_quorum_policy'];
    if (!isObject(d) || typeof d['kind'] !== 'string')
      return fail('default_quorum_policy must be {kind, threshold?}', 'default_quorum_policy');
    only(d, ['kind', 'threshold'], 'default_quorum_policy');
    const kind = d['kind'];
    const custom = (doc.quorum_policies ?? []).some((p) => p.kind === kind);
    if (kind === 'weighted') {
      doc.default_quorum_policy = { kind, threshold: checkThreshold(d['threshold'], bound, 'default_quorum_policy.threshold') };
    } else if (kind === 'count' || custom) {
      if (d['threshold'] !== undefined) fail(`default_quorum_policy of kind ${kind} takes no threshold`, 'default_quorum_policy.threshold');
      doc.default_quorum_policy = { kind };
    } else {
      // unanimous needs the electorate of each proposal: it cannot be a domain-wide default.
      fail(
        `default_quorum_policy.kind must be count, weighted or a kind defined in quorum_policies, not ${kind}`,
        'default_quorum_policy.kind',
      );
    }
  }
  return doc;
}

/** 1.4 #3 extended to policies: a new document takes the next version, so a decision names exactly one. */
export function checkNextVersion(current: DomainPolicyDocument | null, next: DomainPolicyDocument): void {
  const expected = (current?.version ?? 0) + 1;
  if (next.version !== expected) {
    throw new AcpError(
      'CONFLICT',
      `policy of ${next.domain} is at version ${current?.version ?? 0}; a new document must have version ${expected}, not ${next.version}`,
      'version',
    );
  }
}

// ---- the rules a document states ----

function power(x: ExactDecimal, n: number): ExactDecimal {
  let r = ONE;
  for (let i = 0; i < n; i++) r = multiply(r, x);
  return r;
}

function exactFactor(x: number): ExactDecimal {
  const c = clampFactor(x);
  return c === 0 ? ZERO : c === 1 ? ONE : decimalFromNumber(c);
}

/**
 * 18.2: the weight of a response under the document's function, exact, in [0, 1] and
 * deterministic. Without a function (or without a document) it is the 6.1 formula.
 */
export function policyWeight(fn: WeightFunctionSpec | undefined, f: WeightFactors): ComputedWeight {
  // The hot path (every response folded) stays the 6.1 code when no function is set.
  if (fn === undefined) return computeWeight(f);
  const x: Record<Factor, ExactDecimal> = {
    domain_authority: exactFactor(f.domain_authority),
    confidence: exactFactor(f.confidence),
    trust_score: exactFactor(f.trust_score),
  };
  let exact: ExactDecimal;
  if (fn?.kind === 'linear') {
    exact = FACTORS.reduce((sum, k) => add(sum, multiply(decimalFromNumber(fn.coefficients[k]), x[k])), ZERO);
  } else {
    const e = fn?.exponents ?? {};
    exact = FACTORS.reduce((prod, k) => multiply(prod, power(x[k], e[k] ?? 1)), ONE);
  }
  return { exact, weight: toNumber(exact) };
}

/** The custom policy a proposal names, when its domain's document defines that kind. */
export function customPolicyOf(doc: DomainPolicyDocument | undefined, kind: string): CustomQuorumPolicySpec | undefined {
  return doc?.quorum_policies?.find((p) => p.kind === kind);
}

/** Whether a declarative policy's conditions all hold. */
export function customPolicyMet(
  spec: CustomQuorumPolicySpec,
  p: { responses: number; totalWeight: ExactDecimal; respondents: ReadonlySet<string> },
): boolean {
  if (spec.min_responses !== undefined && p.responses < spec.min_responses) return false;
  if (spec.min_total_weight !== undefined && compare(p.totalWeight, decimalFromNumber(spec.min_total_weight)) < 0) return false;
  if (spec.required_participants && !spec.required_participants.every((id) => p.respondents.has(id))) return false;
  return true;
}

/** The bound a weighted threshold of this domain must respect. */
export function maxWeightedThreshold(doc: DomainPolicyDocument | undefined): number {
  return doc?.max_weighted_threshold ?? DEFAULT_MAX_WEIGHTED_THRESHOLD;
}

// ---- the policy stream's events and decider ----

export interface DomainPolicySet {
  event_id: string;
  type: typeof DOMAIN_POLICY_EVENT_TYPE;
  schema_version: number;
  occurred_at: string;
  actor: string;
  causation_id: string;
  correlation_id: string;
  data: { document: DomainPolicyDocument };
}

export interface SetDomainPolicy {
  command_id: string;
  now: string;
  actor: string;
  data: { document: DomainPolicyDocument };
}

export type DomainPolicyState = DomainPolicyDocument | null;

export function evolveDomainPolicy(_state: DomainPolicyState, event: DomainPolicySet): DomainPolicyState {
  return event.data.document;
}

/** One new version per command; setting the recorded document again is a no-op (a retry). */
export function decideSetDomainPolicy(command: SetDomainPolicy, state: DomainPolicyState): DomainPolicySet[] {
  const doc = command.data.document;
  if (state && state.version === doc.version && canonicalJson(state) === canonicalJson(doc)) return [];
  checkNextVersion(state, doc);
  return [
    {
      event_id: deriveEventId(command.command_id, 1),
      type: DOMAIN_POLICY_EVENT_TYPE,
      schema_version: 1,
      occurred_at: command.now,
      actor: command.actor,
      causation_id: command.command_id,
      correlation_id: doc.domain,
      data: { document: doc },
    },
  ];
}
