/**
 * Spec section 7 (quorum policies) and 18.1 (custom policies through the QuorumPolicy interface).
 */
import { BUILT_IN_QUORUM_POLICY_KINDS } from './contracts';
import { AcpError } from './errors';
import { compare, decimalFromNumber } from './exact-decimal';
import type { PendingProposal, ProposalDetails } from './proposal.state';
import { totalWeight } from './weighted-voting';
import { customPolicyMet, customPolicyOf, CustomQuorumPolicySpec, maxWeightedThreshold } from './domain-policy';
import type { QuorumPolicySpec } from './wire-format';

/**
 * The quorum policy a proposal is decided by: the one it names, else its domain's default
 * (18.1 policy document), else count (7.1).
 */
export function effectiveQuorumPolicy(proposal: ProposalDetails): QuorumPolicySpec | null {
  return proposal.quorum_policy ?? proposal.policy?.default_quorum_policy ?? null;
}

/**
 * 18.1 `is_met(proposal) -> bool`. Implementations must be pure and deterministic: the decider
 * calls `isMet` to refuse responses once quorum is met, and the resolver calls it to resolve.
 */
export interface QuorumPolicy {
  readonly kind: string;
  /** Checked on SubmitProposal; throw an AcpError (SCHEMA_VIOLATION) to refuse the proposal. */
  validate?(proposal: ProposalDetails): void;
  isMet(proposal: PendingProposal): boolean;
}

export type QuorumPolicyRegistry = ReadonlyMap<string, QuorumPolicy>;

/** 7.1 count-based (default): len(responses) >= quorum. */
export const countQuorumPolicy: QuorumPolicy = {
  kind: 'count',
  isMet: (p) => p.responses.length >= p.proposal.quorum,
};

/** 7.2 weighted: exact total weight >= threshold (threshold a number > 0). */
export const weightedQuorumPolicy: QuorumPolicy = {
  kind: 'weighted',
  validate(proposal) {
    const t = effectiveQuorumPolicy(proposal)?.threshold;
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'quorum_policy.threshold of a weighted policy must be a number > 0',
        'quorum_policy.threshold',
      );
    }
    // A threshold no panel can reach leaves the proposal to time out: refused instead.
    const bound = maxWeightedThreshold(proposal.policy);
    if (t > bound) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        `quorum_policy.threshold ${t} is above the upper bound on weighted thresholds in ${proposal.domain} (${bound})`,
        'quorum_policy.threshold',
      );
    }
  },
  isMet: (p) => compare(totalWeight(p.tally), decimalFromNumber(effectiveQuorumPolicy(p.proposal)?.threshold ?? 0)) >= 0,
};

/** The participants who must respond: the eligible set, minus the author (who may not respond, 5.3). */
function unanimousElectorate(proposal: ProposalDetails): string[] {
  return (proposal.eligible_participants ?? []).filter((id) => id !== proposal.author);
}

/**
 * 7.3 unanimous: every eligible participant (fixed at submission) has responded. Counted as a set,
 * not a length, so a response from outside the set cannot stand in for a missing one.
 */
export const unanimousQuorumPolicy: QuorumPolicy = {
  kind: 'unanimous',
  validate(proposal) {
    if (unanimousElectorate(proposal).length === 0) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'a unanimous quorum policy needs eligible_participants other than the author, fixed at submission (7.3)',
        'eligible_participants',
      );
    }
  },
  isMet: (p) => unanimousElectorate(p.proposal).every((id) => p.respondents.has(id)),
};

const BUILT_INS: readonly QuorumPolicy[] = [countQuorumPolicy, weightedQuorumPolicy, unanimousQuorumPolicy];

/**
 * A registry of the built-in policies plus custom ones. Built-in kinds cannot be replaced:
 * 17.3 forbids changing core semantics.
 */
export function createQuorumPolicyRegistry(custom: readonly QuorumPolicy[] = []): QuorumPolicyRegistry {
  const registry = new Map<string, QuorumPolicy>(BUILT_INS.map((p) => [p.kind, p]));
  for (const p of custom) {
    if ((BUILT_IN_QUORUM_POLICY_KINDS as readonly string[]).includes(p.kind) || registry.has(p.kind)) {
      throw new AcpError('SCHEMA_VIOLATION', `quorum policy kind ${p.kind} is already registered`, 'kind');
    }
    registry.set(p.kind, p);
  }
  return registry;
}

export const DEFAULT_QUORUM_POLICIES: QuorumPolicyRegistry = createQuorumPolicyRegistry();

/** A declarative policy of a domain's document (18.1) as a QuorumPolicy. */
export function declarativeQuorumPolicy(spec: CustomQuorumPolicySpec): QuorumPolicy {
  return {
    kind: spec.kind,
    validate(proposal) {
      if (proposal.quorum_policy?.threshold !== undefined && proposal.quorum_policy.kind === spec.kind) {
        throw new AcpError(
          'SCHEMA_VIOLATION',
          `quorum_policy ${spec.kind} is defined by the domain's policy and takes no threshold`,
          'quorum_policy.threshold',
        );
      }
    },
    isMet: (p) => customPolicyMet(spec, { responses: p.responses.length, totalWeight: totalWeight(p.tally), respondents: p.respondents }),
  };
}

/**
 * The policy governing a proposal: a kind its domain's document defines, else a registered one;
 * anything else is a SCHEMA_VIOLATION on quorum_policy.kind.
 */
export function quorumPolicyFor(proposal: ProposalDetails, registry: QuorumPolicyRegistry): QuorumPolicy {
  const kind = effectiveQuorumPolicy(proposal)?.kind ?? 'count';
  const custom = customPolicyOf(proposal.policy, kind);
  if (custom) return declarativeQuorumPolicy(custom);
  const policy = registry.get(kind);
  if (!policy) {
    const known = [...registry.keys(), ...(proposal.policy?.quorum_policies ?? []).map((p) => p.kind)];
    throw new AcpError(
      'SCHEMA_VIOLATION',
      `quorum_policy.kind ${kind} is not supported in ${proposal.domain} (supported: ${known.join(', ')})`,
      'quorum_policy.kind',
    );
  }
  return policy;
}

/** Is the proposal's quorum policy met? (Parents, 9.3, are decided by their children instead.) */
export function isQuorumMet(proposal: PendingProposal, registry: QuorumPolicyRegistry): boolean {
  if (proposal.proposal.depends_on.length > 0) return false;
  return quorumPolicyFor(proposal.proposal, registry).isMet(proposal);
}
