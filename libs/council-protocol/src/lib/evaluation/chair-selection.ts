import { MemberDescriptor, holdsRole } from '../member-descriptor';
import { seededRandom, seededShuffle } from '../seeded-shuffle';
import { fail, num, oneOf, record } from '../validation';
import { CapabilityProjection, capabilityOf } from './capability';

/**
 * Chair selection is a binding policy (spec 14); the top-ranked proposer is not automatically
 * the best synthesizer. These policies produce the `chair_order` (chair, then its authorised
 * fallbacks) from the panel, the synthesizer estimates, the domain's chair history and the seed.
 */
export type ChairSelectionPolicy =
  | { policy: 'scoped-capability' }
  | { policy: 'rotation' }
  /** 16.6: with probability `rate`, a low-observation member chairs; otherwise `base` decides. */
  | { policy: 'exploration'; rate: number; min_observations: number; base: 'scoped-capability' | 'rotation' };

export interface ChairSelectionInput {
  panel: readonly MemberDescriptor[];
  domain: string;
  /** The run's seed: the only source of chance. */
  seed: string;
  capabilities: CapabilityProjection;
  /** Who chaired earlier runs of this domain, oldest first. */
  previous_chairs: readonly string[];
  /** Members that may not chair this run (e.g. not independent of proposing). */
  exclude?: readonly string[];
}

export interface ChairCandidateScore {
  member_id: string;
  estimate: number;
  lower: number;
  observations: number;
}

export interface ChairSelection {
  policy: ChairSelectionPolicy['policy'];
  chair: string | null;
  chair_order: string[];
  /** True when this run's chair fills an exploration slot. */
  exploration: boolean;
  reason: string;
  scores: ChairCandidateScore[];
}

export function checkChairSelectionPolicy(p: ChairSelectionPolicy): ChairSelectionPolicy {
  if (p.policy === 'exploration') {
    if (!(p.rate >= 0 && p.rate <= 1)) fail('chair_selection.rate', 'must be in [0, 1]');
    if (!(Number.isInteger(p.min_observations) && p.min_observations >= 1))
      fail('chair_selection.min_observations', 'must be an integer >= 1');
  }
  return p;
}

/** Validate a policy value: a policy name or `{policy, ...parameters}`. */
export function parseChairSelectionPolicy(input: unknown, path = 'chair_selection'): ChairSelectionPolicy {
  const o: Record<string, unknown> = typeof input === 'string' ? { policy: input } : record(input, path);
  const policy = oneOf(o, 'policy', path, ['scoped-capability', 'rotation', 'exploration'] as const);
  if (policy !== 'exploration') return { policy };
  return {
    policy,
    rate: num(o, 'rate', path, { min: 0, max: 1 }),
    min_observations: num(o, 'min_observations', path, { min: 1, integer: true }),
    base: o['base'] === undefined ? 'scoped-capability' : oneOf(o, 'base', path, ['scoped-capability', 'rotation'] as const),
  };
}

function eligible(input: ChairSelectionInput): MemberDescriptor[] {
  const excluded = new Set(input.exclude ?? []);
  return input.panel.filter((m) => holdsRole(m, 'chair') && !excluded.has(m.member_id));
}

function seededIndex(ids: readonly string[], seed: string): (id: string) => number {
  const order = seededShuffle([...ids].sort(), seed);
  return (id) => order.indexOf(id);
}

function scoresOf(members: readonly MemberDescriptor[], input: ChairSelectionInput): ChairCandidateScore[] {
  return members.map((m) => {
    const e = capabilityOf(input.capabilities, m, 'synthesizer', input.domain);
    return { member_id: m.member_id, estimate: e.estimate, lower: e.lower, observations: e.observations };
  });
}

/** By the lower end of the synthesizer interval: a lucky small sample does not outrank evidence (16.4). */
function byCapability(members: readonly MemberDescriptor[], input: ChairSelectionInput): string[] {
  const scores = new Map(scoresOf(members, input).map((s) => [s.member_id, s]));
  const tie = seededIndex(
    members.map((m) => m.member_id),
    `${input.seed}:chair-tie-break`,
  );
  return members
    .map((m) => m.member_id)
    .sort((a, b) => {
      const sa = scores.get(a) as ChairCandidateScore;
      const sb = scores.get(b) as ChairCandidateScore;
      return sb.lower - sa.lower || sb.estimate - sa.estimate || tie(a) - tie(b);
    });
}

/** Who chaired least recently goes first; never-chaired members before all others. */
function byRotation(members: readonly MemberDescriptor[], input: ChairSelectionInput): string[] {
  const last = (id: string) => input.previous_chairs.lastIndexOf(id);
  const tie = seededIndex(
    members.map((m) => m.member_id),
    `${input.seed}:chair-tie-break`,
  );
  return members.map((m) => m.member_id).sort((a, b) => last(a) - last(b) || tie(a) - tie(b));
}

export function selectChair(policy: ChairSelectionPolicy, input: ChairSelectionInput): ChairSelection {
  checkChairSelectionPolicy(policy);
  const members = eligible(input);
  const scores = scoresOf(members, input);
  const result = (order: string[], exploration: boolean, reason: string): ChairSelection => ({
    policy: policy.policy,
    chair: order[0] ?? null,
    chair_order: order,
    exploration,
    reason,
    scores,
  });
  if (members.length === 0) return result([], false, 'no panel member holds the chair role');
  switch (policy.policy) {
    case 'scoped-capability':
      return result(byCapability(members, input), false, `highest lower bound of the synthesizer estimate in ${input.domain}`);
    case 'rotation':
      return result(byRotation(members, input), false, `least recent chair in ${input.domain}`);
    case 'exploration': {
      const base = policy.base === 'rotation' ? byRotation(members, input) : byCapability(members, input);
      const draw = seededRandom(`${input.seed}:chair-exploration`)();
      const fresh = scores.filter((s) => s.observations < policy.min_observations).map((s) => s.member_id);
      if (draw < policy.rate && fresh.length > 0) {
        const pick = seededShuffle([...fresh].sort(), `${input.seed}:chair-exploration-pick`)[0];
        return result(
          [pick, ...base.filter((id) => id !== pick)],
          true,
          `exploration slot (draw ${draw.toFixed(4)} < ${policy.rate}): ${pick} has fewer than ${policy.min_observations} synthesizer observations in ${input.domain}`,
        );
      }
      const why = fresh.length === 0 ? 'no low-observation member' : `draw ${draw.toFixed(4)} >= ${policy.rate}`;
      return result(
        base,
        false,
        `no exploration slot (${why}); ${policy.base === 'rotation' ? 'least recent chair' : 'highest lower bound of the synthesizer estimate'}`,
      );
    }
    default: {
      const _exhaustive: never = policy;
      return _exhaustive;
    }
  }
}
