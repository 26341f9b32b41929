/**
 * Spec section 9: domains, and the parent/child pattern for cross-domain decisions (9.3).
 */
import type { ChildOutcome, DecisionEvent } from './wire-format';

/**
 * 9.1: hierarchical ('.'-separated), case-sensitive. Each segment is a NATS subject token
 * ([A-Za-z0-9_-]+), so `acp.v1.decisions.<domain>` is a valid subject and `risk.>` a subtree.
 */
const DOMAIN = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

export function isDomain(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 255 && DOMAIN.test(value);
}

/** Segment-wise prefix: 'ops' covers 'ops' and 'ops.deploy', never 'opsx'. '' covers all. */
export function isWithinDomain(domain: string, prefix: string): boolean {
  return prefix === '' || domain === prefix || domain.startsWith(`${prefix}.`);
}

/** What a parent proposal does next, given its children's recorded outcomes (9.3). */
export type ParentOutcomeDecision =
  | { kind: 'wait'; missing: string[] }
  | { kind: 'resolve'; outcome: 'approved' | 'rejected'; approved: number; against: number };

/**
 * Parent outcome rule (9.3, our choice, see docs/conformance.md): the parent resolves only once
 * every child has a final outcome; then all approved -> approved, any rejected or expired ->
 * rejected. A child that is escalated has no final outcome until a human resolves it, and then
 * counts with the human's outcome.
 */
export function parentOutcome(dependsOn: readonly string[], recorded: Readonly<Record<string, ChildOutcome>>): ParentOutcomeDecision {
  const missing = dependsOn.filter((id) => recorded[id] === undefined);
  if (missing.length > 0) return { kind: 'wait', missing };
  const approved = dependsOn.filter((id) => recorded[id] === 'approved').length;
  const against = dependsOn.length - approved;
  return { kind: 'resolve', outcome: against === 0 ? 'approved' : 'rejected', approved, against };
}

/**
 * The final outcome a child's decision event contributes to its parents, or undefined while
 * the child is escalated (a human has yet to decide). For the resolver service.
 */
export function childOutcomeOf(decision: Pick<DecisionEvent, 'outcome'>): ChildOutcome | undefined {
  return decision.outcome === 'escalated' ? undefined : decision.outcome;
}
