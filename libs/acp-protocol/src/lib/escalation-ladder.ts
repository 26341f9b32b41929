/**
 * The escalation desk's routing (spec 10.3 "which human or team is responsible", 10.4 channels):
 * per-domain routes naming the assignees, an escalation ladder (a reminder after a set time, a
 * fallback assignee after another, a default outcome or expiry after a last one) and an optional
 * M-of-N human sign-off. Routes are configuration handed in by the service; what a route says
 * for one escalation is recorded on the proposal stream (EscalationRouted), so the ladder and the
 * sign-off are decided from the log, never from configuration that may have changed since.
 */
import { LADDER_DEFAULT_OUTCOMES } from './contracts';
import type { LadderDefaultOutcome } from './contracts';
import { isWithinDomain } from './domain-scoped-resolution';
import { AcpError } from './errors';
import { instantOf, isoFromInstant } from './timestamps';
import type { EscalationMetadata } from './wire-format';
import type { ProposalDetails } from './proposal.details';
import { parseNameList, parseSignOffRule, SignOffRule } from './human-sign-off';

/** One rung of the ladder. `after_ms` counts from the previous step (the first: from the escalation). */
export type LadderStep =
  | { action: 'remind'; after_ms: number }
  | { action: 'reassign'; after_ms: number; to: string[] }
  | { action: 'default'; after_ms: number; outcome: LadderDefaultOutcome };

/** A per-domain route (configuration). The longest matching `domain_prefix` wins. */
export interface EscalationRoute {
  id: string;
  /** Segment-wise domain prefix; '' covers every domain. */
  domain_prefix: string;
  /** Humans or teams responsible for the resolution (10.3). */
  assignees: string[];
  ladder: LadderStep[];
  sign_off?: SignOffRule;
}

/** What the desk records for one escalation (EscalationRouted), fixed from then on. */
export interface EscalationRouting {
  /** The route that matched, or null when none did (no ladder, anyone may resolve). */
  route_id: string | null;
  assignees: string[];
  ladder: LadderStep[];
  sign_off: SignOffRule | null;
}

/** The route for a domain: the longest matching prefix; among equals, the first configured. */
export function routeFor(routes: readonly EscalationRoute[], domain: string): EscalationRoute | undefined {
  let best: EscalationRoute | undefined;
  for (const r of routes) {
    if (!isWithinDomain(domain, r.domain_prefix)) continue;
    if (best === undefined || r.domain_prefix.length > best.domain_prefix.length) best = r;
  }
  return best;
}

/**
 * The routing of one escalation: the domain's route, with the assignee a policy rule named
 * (10.1 item 3 `assign_to`) ahead of the route's own assignees.
 */
export function routingFor(
  routes: readonly EscalationRoute[],
  proposal: Pick<ProposalDetails, 'domain'>,
  escalation: Pick<EscalationMetadata, 'assigned_to'>,
): EscalationRouting {
  const route = routeFor(routes, proposal.domain);
  const assignees = [...(escalation.assigned_to ? [escalation.assigned_to] : []), ...(route?.assignees ?? [])];
  return {
    route_id: route?.id ?? null,
    assignees: [...new Set(assignees)],
    ladder: route ? route.ladder.map((s) => ({ ...s })) : [],
    sign_off: route?.sign_off ? { ...route.sign_off, of: [...route.sign_off.of] } : null,
  };
}

/** When ladder step `index` (from 0) falls due for an escalation made at `escalatedAt`, or null past the end. */
export function ladderStepDueAt(escalatedAt: string, ladder: readonly LadderStep[], index: number): string | null {
  if (index < 0 || index >= ladder.length) return null;
  let ms = 0;
  for (let i = 0; i <= index; i++) ms += ladder[i].after_ms;
  return isoFromInstant(instantOf(escalatedAt) + BigInt(ms) * 1_000_000n);
}

/** The ladder steps (indexes) due at `now`, starting at `nextIndex`; stops after a `default` step. */
export function dueLadderSteps(escalatedAt: string, ladder: readonly LadderStep[], nextIndex: number, now: string): number[] {
  const due: number[] = [];
  const t = instantOf(now);
  for (let i = nextIndex; i < ladder.length; i++) {
    const at = ladderStepDueAt(escalatedAt, ladder, i)!;
    if (instantOf(at) > t) break;
    due.push(i);
    if (ladder[i].action === 'default') break;
  }
  return due;
}

// ---- configuration validation: a bad route is refused at service start, naming the field ----

function fail(field: string, message: string): never {
  throw new AcpError('SCHEMA_VIOLATION', `${field} ${message}`, field);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const DOMAIN_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
/** Ladder delays are at most a year. */
const MAX_AFTER_MS = 366 * 24 * 3600 * 1000;

function parseStep(v: unknown, field: string, last: boolean): LadderStep {
  if (!isRecord(v)) fail(field, 'must be an object');
  const after = v['after_ms'];
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0 || after > MAX_AFTER_MS) {
    fail(`${field}.after_ms`, 'must be an integer number of milliseconds >= 0');
  }
  switch (v['action']) {
    case 'remind':
      return { action: 'remind', after_ms: after };
    case 'reassign':
      return { action: 'reassign', after_ms: after, to: parseNameList(v['to'], `${field}.to`, false) };
    case 'default': {
      if (!last) fail(`${field}.action`, 'default must be the last step of the ladder');
      const outcome = v['outcome'];
      if (!(LADDER_DEFAULT_OUTCOMES as readonly unknown[]).includes(outcome))
        fail(`${field}.outcome`, `must be one of ${LADDER_DEFAULT_OUTCOMES.join(', ')}`);
      return { action: 'default', after_ms: after, outcome: outcome as LadderDefaultOutcome };
    }
    default:
      return fail(`${field}.action`, 'must be remind, reassign or default');
  }
}

/** Validates the routes configuration (e.g. parsed from CONCLAVE_ESCALATION_ROUTES). */
export function parseEscalationRoutes(config: unknown): EscalationRoute[] {
  if (!Array.isArray(config)) fail('escalation_routes', 'must be an array of routes');
  const seen = new Set<string>();
  return config.map((r: unknown, i: number) => {
    const at = `escalation_routes.${i}`;
    if (!isRecord(r)) fail(at, 'must be an object');
    const id = r['id'];
    if (typeof id !== 'string' || id.length === 0) fail(`${at}.id`, 'must be a non-empty string');
    if (seen.has(id)) fail(`${at}.id`, `duplicates route ${id}`);
    seen.add(id);
    const prefix = r['domain_prefix'] ?? '';
    if (typeof prefix !== 'string' || (prefix !== '' && !DOMAIN_PREFIX.test(prefix))) fail(`${at}.domain_prefix`, 'must be a domain');
    const assignees = r['assignees'] === undefined ? [] : parseNameList(r['assignees'], `${at}.assignees`, true);
    const rawLadder = r['ladder'] ?? [];
    if (!Array.isArray(rawLadder)) fail(`${at}.ladder`, 'must be an array of steps');
    const ladder = rawLadder.map((s: unknown, k: number) => parseStep(s, `${at}.ladder.${k}`, k === rawLadder.length - 1));
    const route: EscalationRoute = { id, domain_prefix: prefix, assignees, ladder };
    if (r['sign_off'] !== undefined) route.sign_off = parseSignOffRule(r['sign_off'], `${at}.sign_off`);
    return route;
  });
}
