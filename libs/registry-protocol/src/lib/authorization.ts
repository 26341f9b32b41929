/**
 * Authorization rules (RFC 14.2, 14.5), pure: what a registered participant may do in a domain,
 * which factors the registry stamps there, and whether its clearance reads a classification.
 *
 * Grants are hierarchical: a grant on `risk` covers `risk` and its whole subtree (`risk.credit`,
 * `risk.credit.retail`), never a sibling (`riskx`) nor another domain (`ops`): cross-domain
 * access needs its own explicit grant. Where grants nest, the most specific one decides alone
 * (actions and factors), so a narrower grant can restrict as well as widen.
 */
import { AcpError, isWithinDomain } from '@conclave/acp-protocol';
import { CLASSIFICATION_LEVELS } from './contracts';
import type { Action, ClassificationLevel, Role } from './contracts';
import { settleRotation } from './participant.state';
import type { DomainGrant, ParticipantKey, ParticipantRecord, ParticipantState } from './participant.state';

/** The most specific grant covering `domain`, if any. */
export function grantFor(participant: ParticipantRecord, domain: string): DomainGrant | undefined {
  let best: DomainGrant | undefined;
  for (const grant of Object.values(participant.grants)) {
    if (!isWithinDomain(domain, grant.domain)) continue;
    if (!best || grant.domain.length > best.domain.length) best = grant;
  }
  return best;
}

export function hasRole(participant: ParticipantRecord, role: Role): boolean {
  return participant.roles.includes(role);
}

/**
 * Whether `state` may perform `action` in `domain`; returns the deciding grant, else throws
 * FORBIDDEN naming what is missing. `resolve` (human resolution, RFC 10.2) also needs the
 * human-resolver role.
 */
export function authorize(state: ParticipantState, action: Action, domain: string): DomainGrant {
  if (state.status !== 'active') {
    throw new AcpError('FORBIDDEN', state.status === 'deactivated' ? 'participant is deactivated' : 'participant is not registered');
  }
  const p = state.participant;
  if (action === 'resolve' && !hasRole(p, 'human-resolver')) {
    throw new AcpError(
      'FORBIDDEN',
      `${p.participant_id} does not have the human-resolver role required to resolve an escalation`,
      'resolved_by',
    );
  }
  const grant = grantFor(p, domain);
  if (!grant) {
    throw new AcpError(
      'FORBIDDEN',
      `${p.participant_id} has no grant for domain ${domain} (14.2: cross-domain access needs an explicit grant)`,
      'domain',
    );
  }
  if (!grant.actions.includes(action)) {
    throw new AcpError('FORBIDDEN', `${p.participant_id}'s grant on ${grant.domain} does not allow ${action}`, 'domain');
  }
  return grant;
}

/** Requires a role (e.g. administrator for registry commands); FORBIDDEN otherwise. */
export function requireRole(state: ParticipantState, role: Role): ParticipantRecord {
  if (state.status !== 'active') throw new AcpError('FORBIDDEN', 'participant is not an active registry member');
  if (!hasRole(state.participant, role))
    throw new AcpError('FORBIDDEN', `${state.participant.participant_id} does not have the ${role} role`);
  return state.participant;
}

export function isClassificationLevel(value: unknown): value is ClassificationLevel {
  return (CLASSIFICATION_LEVELS as readonly unknown[]).includes(value);
}

/** A clearance reads its own level and every lower one (14.5). */
export function clears(clearance: ClassificationLevel, classification: ClassificationLevel): boolean {
  return CLASSIFICATION_LEVELS.indexOf(clearance) >= CLASSIFICATION_LEVELS.indexOf(classification);
}

/**
 * Keys that authenticate commands at `now` (ISO 8601): active ones, once a pending rotation due by
 * then has taken effect (retired, revoked and still-pending keys never do).
 */
export function activeKeys(participant: ParticipantRecord, now: string): ParticipantKey[] {
  return settleRotation(participant, now).keys.filter((k) => k.status === 'active');
}
