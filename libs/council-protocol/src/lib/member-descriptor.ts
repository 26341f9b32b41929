import { COUNCIL_ROLES, CouncilRole, DEFAULT_MEMBER_ROLES, MEMBER_ID_PATTERN, RESERVED_MEMBER_ID } from './contracts';
import { CouncilError } from './errors';
import { arr, fail, join, optStr, record, str, strings } from './validation';

/**
 * Council member descriptor (spec section 6): an execution identity, not a model id.
 * `role` is the member's evaluative lens (e.g. `skeptic`); `council_roles` (an extension) names
 * the protocol capabilities it holds (missing-tables A.2) and defaults to proposer, reviewer and
 * reviser.
 */
export interface MemberDescriptor {
  member_id: string;
  model_family: string;
  provider_runtime: string;
  model_version?: string;
  role: string;
  role_contract: string;
  context_scope: string;
  memory_scope: string;
  tools: string[];
  generation_policy?: string;
  independence_group: string;
  council_roles?: CouncilRole[];
}

/** `unknown` is an honest value for model_family etc.; absence is not (checklist item 3). */
export function parseMemberDescriptor(input: unknown, path = ''): MemberDescriptor {
  const o = record(input, path);
  const memberId = str(o, 'member_id', path);
  if (!MEMBER_ID_PATTERN.test(memberId)) fail(join(path, 'member_id'), 'must match [A-Za-z0-9_-]+ (it is a NATS subject token)');
  if (RESERVED_MEMBER_ID.test(memberId)) fail(join(path, 'member_id'), 'must not read as a blind ref (anon-<letter>-v<n>, review-<n>)');
  const d: MemberDescriptor = {
    member_id: memberId,
    model_family: str(o, 'model_family', path),
    provider_runtime: str(o, 'provider_runtime', path),
    role: str(o, 'role', path),
    role_contract: str(o, 'role_contract', path),
    context_scope: str(o, 'context_scope', path),
    memory_scope: str(o, 'memory_scope', path),
    tools: strings(o, 'tools', path, { optional: true }),
    independence_group: str(o, 'independence_group', path),
  };
  const modelVersion = optStr(o, 'model_version', path);
  if (modelVersion !== undefined) d.model_version = modelVersion;
  const gp = o['generation_policy'];
  if (gp !== undefined && gp !== null) d.generation_policy = typeof gp === 'string' ? gp : JSON.stringify(gp);
  if (o['council_roles'] !== undefined) {
    const roles = arr(o, 'council_roles', path, { nonEmpty: true }).map((r, i) => {
      if (typeof r !== 'string' || !(COUNCIL_ROLES as readonly string[]).includes(r)) {
        fail(join(join(path, 'council_roles'), i), `must be one of ${COUNCIL_ROLES.join(' | ')}`);
      }
      return r as CouncilRole;
    });
    d.council_roles = roles;
  }
  return d;
}

export function memberRoles(member: MemberDescriptor): readonly CouncilRole[] {
  return member.council_roles ?? DEFAULT_MEMBER_ROLES;
}

export function holdsRole(member: MemberDescriptor, role: CouncilRole): boolean {
  return memberRoles(member).includes(role);
}

/** A panel: valid descriptors with unique ids. */
export function parsePanel(input: unknown, path = 'panel'): MemberDescriptor[] {
  if (!Array.isArray(input)) fail(path, 'must be an array of member descriptors');
  if (input.length === 0) fail(path, 'must not be empty');
  const panel = input.map((m, i) => parseMemberDescriptor(m, join(path, i)));
  const seen = new Set<string>();
  panel.forEach((m, i) => {
    if (seen.has(m.member_id)) {
      throw new CouncilError('SCHEMA_VIOLATION', `duplicate member_id ${m.member_id}`, join(join(path, i), 'member_id'));
    }
    seen.add(m.member_id);
  });
  return panel;
}

/** Diversity profile (spec section 5): what actually differs across the panel. */
export interface DiversityProfile {
  independence_groups: Record<string, string[]>;
  model_families: string[];
  roles: string[];
  /** True when every member shares one independence group: correlated model risk (19.2). */
  correlated: boolean;
}

export function diversityProfile(panel: readonly MemberDescriptor[]): DiversityProfile {
  const groups: Record<string, string[]> = {};
  for (const m of panel) (groups[m.independence_group] ??= []).push(m.member_id);
  return {
    independence_groups: groups,
    model_families: [...new Set(panel.map((m) => m.model_family))].sort(),
    roles: [...new Set(panel.map((m) => m.role))].sort(),
    correlated: Object.keys(groups).length <= 1,
  };
}
