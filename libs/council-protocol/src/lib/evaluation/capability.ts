import { NO_DECISION, SYNTHESIS } from '../decision-record';
import { fail, instantMs, optNum, record } from '../validation';
import { MemberDescriptor } from '../member-descriptor';
import { RunRecord } from '../run-record';
import { CapabilityEstimate } from '../run-aggregation';
import { OutcomeVerdict, StructuredOutcome, standingOutcome } from './outcomes';

/** The roles history is scoped to (15.3): proposing, reviewing and synthesising differ. */
export const CAPABILITY_ROLES = ['proposer', 'reviewer', 'synthesizer'] as const;
export type CapabilityRole = (typeof CAPABILITY_ROLES)[number];

/** A model × version × role × domain × tools profile (15.3: contextual, not one number). */
export interface CapabilityScope {
  model_family: string;
  model_version: string;
  role: CapabilityRole;
  domain: string;
  /** Sorted tool names, joined by `,`; empty for none. */
  tools: string;
}

/** Outcome evidence is external; peer preference is what the council itself preferred (16.3). */
export type CapabilityEvidenceKind = 'outcome' | 'peer-preference';

export interface CapabilityObservation {
  observation_id: string;
  run_id: string;
  at: string;
  member_id: string;
  scope: CapabilityScope;
  kind: CapabilityEvidenceKind;
  /** 1 = the member did well here, 0 = it did not; 0.5 for a mixed outcome. */
  success: number;
  /** Why, in words: what was observed. */
  basis: string;
}

/**
 * A Beta posterior over the chance that this profile does well in this role and domain. Extends
 * the library's `CapabilityEstimate` (estimate, uncertainty, observations) with its scope.
 */
export interface ScopedCapabilityEstimate extends Omit<CapabilityEstimate, 'role'>, CapabilityScope {
  alpha: number;
  beta: number;
  /** 90% interval, normal approximation clipped to [0, 1]. */
  lower: number;
  upper: number;
  evidence: Record<CapabilityEvidenceKind, { count: number; weight: number }>;
  /** Set when the estimate started from an earlier version's (decayed) evidence. */
  carried_from: { model_version: string; factor: number } | null;
  superseded_by: string | null;
  last_observed_at: string;
}

export interface CapabilityOptions {
  prior_alpha: number;
  prior_beta: number;
  /** Weight of one outcome observation (15.4: outcome evidence dominates). */
  outcome_weight: number;
  /** Weight of one peer-preference observation; must be below outcome_weight (16.3). */
  peer_weight: number;
  /**
   * On a model version change (15.3): `reset` starts the new version at the prior; a number in
   * (0, 1) starts it from the previous version's evidence scaled by that factor.
   */
  on_version_change: 'reset' | number;
}

export const DEFAULT_CAPABILITY_OPTIONS: CapabilityOptions = {
  prior_alpha: 1,
  prior_beta: 1,
  outcome_weight: 1,
  peer_weight: 0.25,
  on_version_change: 'reset',
};

/** `path`: where the options sit in the input (`policy.capability` in a policy), for the error's field. */
export function checkCapabilityOptions(options: CapabilityOptions, path = 'capability'): CapabilityOptions {
  if (!(options.prior_alpha > 0 && options.prior_beta > 0)) fail(`${path}.prior`, 'prior_alpha and prior_beta must be > 0');
  if (!(options.outcome_weight > 0)) fail(`${path}.outcome_weight`, 'must be > 0');
  if (!(options.peer_weight >= 0 && options.peer_weight < options.outcome_weight)) {
    fail(`${path}.peer_weight`, 'must be >= 0 and below outcome_weight: outcome evidence outweighs peer preference (16.3)');
  }
  const v = options.on_version_change;
  if (v !== 'reset' && !(typeof v === 'number' && v > 0 && v < 1))
    fail(`${path}.on_version_change`, "must be 'reset' or a factor in (0, 1)");
  return options;
}

/** Validate the policy's capability options from unknown input, filling defaults. */
export function parseCapabilityOptions(input: unknown, path = 'capability'): CapabilityOptions {
  const o = input === undefined || input === null ? {} : record(input, path);
  const d = DEFAULT_CAPABILITY_OPTIONS;
  const change = o['on_version_change'];
  return checkCapabilityOptions(
    {
      prior_alpha: optNum(o, 'prior_alpha', path) ?? d.prior_alpha,
      prior_beta: optNum(o, 'prior_beta', path) ?? d.prior_beta,
      outcome_weight: optNum(o, 'outcome_weight', path) ?? d.outcome_weight,
      peer_weight: optNum(o, 'peer_weight', path) ?? d.peer_weight,
      on_version_change:
        change === undefined ? d.on_version_change : change === 'reset' ? 'reset' : (optNum(o, 'on_version_change', path) as number),
    },
    path,
  );
}

export function scopeKey(s: CapabilityScope): string {
  return [s.model_family, s.model_version, s.role, s.domain, s.tools].join('|');
}

/** The same profile across model versions: where a version change is detected. */
function versionlessKey(s: CapabilityScope): string {
  return [s.model_family, s.role, s.domain, s.tools].join('|');
}

export function memberScope(member: MemberDescriptor, role: CapabilityRole, domain: string): CapabilityScope {
  return {
    model_family: member.model_family,
    model_version: member.model_version ?? 'unknown',
    role,
    domain,
    tools: [...member.tools].sort().join(','),
  };
}

/** What one run contributes: its record, its domain (from the GoalContract) and its outcomes. */
export interface CapabilityRunInput {
  record: RunRecord;
  domain: string;
  outcomes: readonly StructuredOutcome[];
}

const VERDICT_VALUE: Record<OutcomeVerdict, number | null> = { success: 1, failure: 0, mixed: 0.5, unknown: null };

/** The member that wrote the run's decision: the answered synthesis task. */
export function chairOf(record: RunRecord): string | null {
  const answered = record.tasks.filter((t) => t.stage === 'synthesis' && (t.status === undefined || t.status === 'answered'));
  return answered.length ? answered[answered.length - 1].member_id : null;
}

/** Lineages (by first version) the decision selected or incorporated. */
function chosenLineages(record: RunRecord): Set<string> {
  const d = record.decision_record;
  const chosen = new Set<string>();
  if (!d || d.selected_path === NO_DECISION) return chosen;
  const picked = new Set([...(d.selected_path === SYNTHESIS ? [] : [d.selected_path]), ...d.incorporated]);
  for (const l of record.lineage) if (l.versions.some((v) => picked.has(v))) chosen.add(l.lineage_id);
  return chosen;
}

/**
 * The observations one run yields. Peer preference: a proposer's lineage chosen or not by the
 * decision; a reviewer's issues accepted or rejected by the author. Outcome evidence (the
 * standing verdict, if known): the chair and the chosen proposers share the verdict; a reviewer
 * of the chosen path is right when it warned (a high-severity issue) and the outcome failed, or
 * did not warn and it succeeded. An unknown outcome yields nothing (18).
 */
export function capabilityObservations(run: CapabilityRunInput): CapabilityObservation[] {
  const { record, domain } = run;
  const members = new Map(record.participants.map((m) => [m.member_id, m]));
  const out: CapabilityObservation[] = [];
  const add = (
    member_id: string,
    role: CapabilityRole,
    kind: CapabilityEvidenceKind,
    success: number,
    at: string,
    ref: string,
    basis: string,
  ) => {
    const m = members.get(member_id);
    if (!m) return;
    out.push({
      observation_id: `${record.run_id}:${kind}:${role}:${member_id}:${ref}`,
      run_id: record.run_id,
      at,
      member_id,
      scope: memberScope(m, role, domain),
      kind,
      success,
      basis,
    });
  };
  const decision = record.decision_record;
  const endedAt = record.timing.ended_at ?? record.terminal?.at ?? record.timing.started_at;
  const chosen = chosenLineages(record);
  if (decision && decision.selected_path !== NO_DECISION) {
    for (const l of record.lineage) {
      add(
        l.author_member_id,
        'proposer',
        'peer-preference',
        chosen.has(l.lineage_id) ? 1 : 0,
        endedAt,
        l.lineage_id,
        chosen.has(l.lineage_id) ? 'its candidate was chosen' : 'its candidate was not chosen',
      );
    }
  }
  // Reviewer peer signal: the author's dispositions of the reviewer's issues.
  const dispositions = new Map<string, { accepted: number; rejected: number }>();
  for (const c of record.artifacts.candidates) {
    for (const r of (c as { responses?: { review_issue: string; disposition: string }[] }).responses ?? []) {
      const reviewId = r.review_issue.split('#issue-')[0];
      const cell = dispositions.get(reviewId) ?? { accepted: 0, rejected: 0 };
      if (r.disposition === 'accepted') cell.accepted++;
      else cell.rejected++;
      dispositions.set(reviewId, cell);
    }
  }
  for (const review of record.artifacts.reviews) {
    const d = dispositions.get(review.review_id);
    if (d && d.accepted + d.rejected > 0)
      add(
        review.reviewer_member_id,
        'reviewer',
        'peer-preference',
        d.accepted / (d.accepted + d.rejected),
        endedAt,
        review.review_id,
        `${d.accepted} of ${d.accepted + d.rejected} issues accepted by the author`,
      );
  }
  const outcome = decision ? standingOutcome(run.outcomes, decision.decision_id) : null;
  const value = outcome ? VERDICT_VALUE[outcome.verdict] : null;
  if (!decision || !outcome || value === null) return out;
  const at = outcome.observed_at;
  const chair = chairOf(record);
  if (chair) add(chair, 'synthesizer', 'outcome', value, at, outcome.outcome_id, `its decision's outcome: ${outcome.verdict}`);
  for (const l of record.lineage)
    if (chosen.has(l.lineage_id))
      add(
        l.author_member_id,
        'proposer',
        'outcome',
        value,
        at,
        `${outcome.outcome_id}:${l.lineage_id}`,
        `its chosen candidate's outcome: ${outcome.verdict}`,
      );
  const chosenVersions = new Set(record.lineage.filter((l) => chosen.has(l.lineage_id)).flatMap((l) => l.versions));
  const lastReview = new Map<string, boolean>();
  for (const review of record.artifacts.reviews) {
    if (chosenVersions.has(review.target_candidate_id))
      lastReview.set(
        review.reviewer_member_id,
        review.material_issues.some((i) => i.severity === 'high'),
      );
  }
  for (const [reviewer, warned] of [...lastReview.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    add(
      reviewer,
      'reviewer',
      'outcome',
      warned ? 1 - value : value,
      at,
      outcome.outcome_id,
      `${warned ? 'warned against' : 'did not warn against'} the chosen path; outcome ${outcome.verdict}`,
    );
  }
  return out;
}

export interface CapabilityProjection {
  options: CapabilityOptions;
  /** By scope key. */
  estimates: Record<string, ScopedCapabilityEstimate>;
  /** Per versionless profile, the version created last. */
  latest_version: Record<string, string>;
  applied: Record<string, true>;
}

export function emptyCapabilityProjection(options: Partial<CapabilityOptions> = {}): CapabilityProjection {
  return { options: checkCapabilityOptions({ ...DEFAULT_CAPABILITY_OPTIONS, ...options }), estimates: {}, latest_version: {}, applied: {} };
}

function summarise(e: ScopedCapabilityEstimate): ScopedCapabilityEstimate {
  const n = e.alpha + e.beta;
  const mean = e.alpha / n;
  const sd = Math.sqrt((e.alpha * e.beta) / (n * n * (n + 1)));
  return { ...e, estimate: mean, uncertainty: sd, lower: Math.max(0, mean - 1.645 * sd), upper: Math.min(1, mean + 1.645 * sd) };
}

/**
 * Fold one observation in (a Beta update weighted by evidence kind). Idempotent by observation
 * id. A scope seen for the first time whose profile was known under another version starts at the
 * prior (`reset`) or from that version's evidence times the decay factor.
 */
export function evolveCapabilities(state: CapabilityProjection, o: CapabilityObservation): CapabilityProjection {
  if (state.applied[o.observation_id]) return state;
  const opts = state.options;
  const key = scopeKey(o.scope);
  const profile = versionlessKey(o.scope);
  const estimates = { ...state.estimates };
  const latest = { ...state.latest_version };
  let e = estimates[key];
  if (!e) {
    const previousVersion = latest[profile];
    const previous = previousVersion === undefined ? undefined : estimates[scopeKey({ ...o.scope, model_version: previousVersion })];
    const factor = typeof opts.on_version_change === 'number' && previous ? opts.on_version_change : 0;
    e = {
      ...o.scope,
      alpha: opts.prior_alpha + (previous ? factor * (previous.alpha - opts.prior_alpha) : 0),
      beta: opts.prior_beta + (previous ? factor * (previous.beta - opts.prior_beta) : 0),
      estimate: 0,
      uncertainty: 0,
      observations: 0,
      lower: 0,
      upper: 1,
      evidence: { outcome: { count: 0, weight: 0 }, 'peer-preference': { count: 0, weight: 0 } },
      carried_from: previous && factor > 0 ? { model_version: previous.model_version, factor } : null,
      superseded_by: null,
      last_observed_at: o.at,
    };
    if (previous) estimates[scopeKey(previous)] = { ...previous, superseded_by: o.scope.model_version };
    latest[profile] = o.scope.model_version;
  }
  const w = o.kind === 'outcome' ? opts.outcome_weight : opts.peer_weight;
  const evidence = { ...e.evidence, [o.kind]: { count: e.evidence[o.kind].count + 1, weight: e.evidence[o.kind].weight + w } };
  estimates[key] = summarise({
    ...e,
    alpha: e.alpha + w * o.success,
    beta: e.beta + w * (1 - o.success),
    observations: e.observations + 1,
    evidence,
    last_observed_at: o.at,
  });
  return { options: opts, estimates, latest_version: latest, applied: { ...state.applied, [o.observation_id]: true } };
}

const byTime = (a: CapabilityObservation, b: CapabilityObservation) =>
  instantMs(a.at, 'at') - instantMs(b.at, 'at') || (a.observation_id < b.observation_id ? -1 : a.observation_id > b.observation_id ? 1 : 0);

/**
 * The capability projection of a history: every run's observations in time order (then by id),
 * folded from empty. The order is total, so a rebuild from the log gives the same estimates.
 */
export function projectCapabilities(runs: readonly CapabilityRunInput[], options: Partial<CapabilityOptions> = {}): CapabilityProjection {
  const observations = runs.flatMap(capabilityObservations).sort(byTime);
  return observations.reduce(evolveCapabilities, emptyCapabilityProjection(options));
}

/** The estimate for a member in a role and domain, or the prior when its profile is unseen. */
export function capabilityOf(
  projection: CapabilityProjection,
  member: MemberDescriptor,
  role: CapabilityRole,
  domain: string,
): ScopedCapabilityEstimate {
  const scope = memberScope(member, role, domain);
  const found = projection.estimates[scopeKey(scope)];
  if (found) return found;
  const { prior_alpha: alpha, prior_beta: beta } = projection.options;
  return summarise({
    ...scope,
    alpha,
    beta,
    estimate: 0,
    uncertainty: 0,
    observations: 0,
    lower: 0,
    upper: 1,
    evidence: { outcome: { count: 0, weight: 0 }, 'peer-preference': { count: 0, weight: 0 } },
    carried_from: null,
    superseded_by: null,
    last_observed_at: '',
  });
}
