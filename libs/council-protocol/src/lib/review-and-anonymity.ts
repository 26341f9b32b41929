import { CandidateClaim } from './candidate-artifact';
import { AnonymizationEntry } from './events';
import { memberApiSchemas } from './member-schemas';
import { ReviewArtifact, reviewIssueId } from './review-artifact';
import { authorOf, candidate } from './run-queries';
import { seededShuffle } from './seeded-shuffle';
import { RunData } from './state';
import { isRecord } from './validation';

/** Spec section 11: blind surface for reviewers, audit surface kept by the controller. */

/** A, B, ..., Z, AA, AB, ... */
export function labelLetter(index: number): string {
  let n = index;
  let s = '';
  do {
    s = String.fromCharCode(65 + (n % 26)) + s;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return s;
}

/**
 * Stable anonymous labels (11.1): a seeded shuffle of the new lineages (sorted first, so the
 * result depends on the seed and the set, not on arrival order) takes the next free letters.
 * Labels are per lineage: a revision of Candidate A is still Candidate A.
 */
export function assignAnonymousLabels(
  lineages: readonly { lineage_id: string; author_member_id: string }[],
  seed: string,
  firstIndex = 0,
): AnonymizationEntry[] {
  const sorted = [...lineages].sort((a, b) => (a.lineage_id < b.lineage_id ? -1 : a.lineage_id > b.lineage_id ? 1 : 0));
  return seededShuffle(sorted, `${seed}:labels:${firstIndex}`).map((l, i) => {
    const letter = labelLetter(firstIndex + i);
    return { label: `Candidate ${letter}`, letter, lineage_id: l.lineage_id, author_member_id: l.author_member_id };
  });
}

/** A different, deterministic order for each reviewer (seed + reviewer), against position bias. */
export function reviewOrderFor<T>(items: readonly T[], seed: string, reviewerId: string, round: number): T[] {
  return seededShuffle(items, `${seed}:review-order:${reviewerId}:${round}`);
}

/** Self-review exclusion (11.2, 11.3): a reviewer is never given a candidate of its own lineage. */
export function reviewTargetsFor(run: RunData, reviewerId: string, candidateIds: readonly string[]): string[] {
  return candidateIds.filter((id) => authorOf(run, id) !== reviewerId);
}

export function blindCandidateRef(run: RunData, candidateId: string): string {
  const stored = run.candidates[candidateId];
  const letter = stored ? run.lineages[stored.lineage_id]?.letter : undefined;
  return `anon-${letter ?? '?'}-v${stored?.candidate.version ?? 0}`;
}

export function blindReviewRef(run: RunData, reviewId: string): string {
  return `review-${run.review_order.indexOf(reviewId) + 1}`;
}

export interface BlindCandidate {
  label: string;
  candidate_ref: string;
  version: number;
  parent_ref: string | null;
  position: string;
  claims: CandidateClaim[];
  evidence_refs: string[];
  assumptions: string[];
  expected_outcomes: string[];
  risks: string[];
  reversal_signals: string[];
  actions: string[];
  confidence_scheme: string;
  confidence: string;
}

/** Candidate content and sources under its label; no candidate_id, no author (11.1). */
export function blindCandidate(run: RunData, candidateId: string): BlindCandidate {
  const c = candidate(run, candidateId);
  const lineage = run.lineages[run.candidates[candidateId].lineage_id];
  return scrubMemberIds(
    {
      label: lineage?.label ?? 'Candidate ?',
      candidate_ref: blindCandidateRef(run, candidateId),
      version: c.version,
      parent_ref: c.parent_candidate_id ? blindCandidateRef(run, c.parent_candidate_id) : null,
      position: c.position,
      claims: c.claims,
      evidence_refs: c.evidence_refs,
      assumptions: c.assumptions,
      expected_outcomes: c.expected_outcomes,
      risks: c.risks,
      reversal_signals: c.reversal_signals,
      actions: c.actions,
      confidence_scheme: c.confidence_scheme,
      confidence: c.confidence,
    },
    run.panel.map((m) => m.member_id),
  );
}

export interface BlindReview {
  review_ref: string;
  target_ref: string;
  rubric_scores: Record<string, number>;
  strengths: string[];
  material_issues: {
    issue_ref: string;
    claim: string;
    evidence_refs: string[];
    severity: string;
    revision_request: string;
    could_change?: string[];
  }[];
  /** Executable tests the reviewer ran on the target (test-first elimination reads them). */
  test_results?: ReviewArtifact['test_results'];
}

/** A review as the moderator and chair see it: no reviewer id, blind refs only. */
export function blindReview(run: RunData, reviewId: string): BlindReview {
  const r = run.reviews[reviewId].review;
  const ref = blindReviewRef(run, reviewId);
  return scrubMemberIds(
    {
      review_ref: ref,
      target_ref: blindCandidateRef(run, r.target_candidate_id),
      rubric_scores: r.rubric_scores,
      strengths: r.strengths,
      material_issues: r.material_issues.map((m, i) => ({ ...m, issue_ref: `${ref}#issue-${i + 1}` })),
      ...(r.test_results ? { test_results: r.test_results } : {}),
    },
    run.panel.map((m) => m.member_id),
  );
}

/** Review task inputs: rubric, goal contract (in the request) and blind candidates in this reviewer's order. */
export function reviewTaskInputs(run: RunData, reviewerId: string, candidateIds: readonly string[]): Record<string, unknown> {
  const targets = reviewTargetsFor(run, reviewerId, candidateIds);
  const ordered = reviewOrderFor(targets, run.seed, reviewerId, run.round);
  return {
    rubric: [...run.policy.rubric],
    candidates: ordered.map((id) => blindCandidate(run, id)),
    instructions: 'Review each candidate by its candidate_ref; set target_candidate_id to that candidate_ref.',
  };
}

/**
 * What the controller writes on the blind surface (refs, labels, the scrub mark itself): never
 * scrubbed, so a member whose id is `A` or `review` cannot corrupt `anon-A-v1` or `review-2`.
 */
const BLIND_GRAMMAR = String.raw`anon-[A-Z]+-v\d+|review-\d+(?:#issue-\d+)?|Candidate [A-Z]+|\[member\]`;
const BLIND_OR_TOKEN = new RegExp(String.raw`(${BLIND_GRAMMAR})(?![A-Za-z0-9_-])|[A-Za-z0-9_-]+`, 'g');

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A member id occurs in a word when it is the whole word or a `-`/`_`-separated part of it
 * (`cand-A-v1` names `A`; `x-ray` names `x`, `ab` does not name `a`), in any letter case:
 * `BUILDER-01` names `builder-01` to a reader as plainly as the id itself does.
 */
function idPartPattern(ids: readonly string[]): RegExp | null {
  const sorted = [...new Set(ids)].filter((id) => id.length > 0).sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return null;
  return new RegExp(`(?<=^|[-_])(?:${sorted.map(escapeRegExp).join('|')})(?=$|[-_])`, 'gi');
}

function scrubText(text: string, part: RegExp): string {
  return text.replace(BLIND_OR_TOKEN, (word: string, blind: string | undefined) =>
    blind !== undefined ? word : word.replace(part, '[member]'),
  );
}

/**
 * Replace every panel member id inside strings and object keys: free text can leak an author ("as
 * member-builder-01 I think..."), and the blind surface must not. Ids are matched as words or
 * word parts, never as raw substrings, and the controller's blind refs are left alone.
 */
export function scrubMemberIds<T>(value: T, memberIds: readonly string[]): T {
  const part = idPartPattern(memberIds);
  if (part === null) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return scrubText(v, part);
    if (Array.isArray(v)) return v.map(walk);
    // Keys too: a member chooses some (rubric score names) and could write an id there.
    if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [scrubText(k, part), walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/**
 * The field names and fixed values of the blind surface (every property name, `enum` and `const`
 * string of the served task and answer schemas), collected once. The scrubber rewrites keys and
 * strings, so a member id that is a word of one of them (`candidate`, `label`, `high`) would
 * rewrite the surface's own structure (`candidate_ref` to `[member]_ref`, two keys into one).
 */
let surfaceWords: readonly string[] | undefined;
function blindSurfaceWords(): readonly string[] {
  if (surfaceWords) return surfaceWords;
  const words = new Set<string>();
  const walk = (v: unknown, key?: string): void => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, key === 'enum' ? 'enum' : undefined));
    if (typeof v === 'string') {
      if (key === 'enum' || key === 'const') words.add(v);
      return;
    }
    if (!isRecord(v)) return;
    for (const [k, x] of Object.entries(v)) {
      if (k === 'properties' && isRecord(x)) for (const name of Object.keys(x)) words.add(name);
      walk(x, k);
    }
  };
  walk(memberApiSchemas());
  return (surfaceWords = [...words]);
}

/** The first field name or fixed value of the blind surface that `memberId` is a word of, if any. */
export function blindSurfaceWordNamedBy(memberId: string): string | undefined {
  const part = idPartPattern([memberId]);
  return part === null ? undefined : blindSurfaceWords().find((w) => scrubText(w, part) !== w);
}

/** Does `text` name `memberId` the way the scrubber would see it (outside blind refs)? */
export function mentionsMemberId(text: string, memberId: string): boolean {
  const part = idPartPattern([memberId]);
  return part !== null && scrubText(text, part) !== text;
}

/**
 * Resolve a reference a member wrote (a blind ref or a real id) to the run's real artifact id.
 * Undefined when it names nothing in the run. Real ids stay on the audit surface (events).
 */
export function resolveArtifactRef(run: RunData, ref: string): string | undefined {
  if (run.candidates[ref]) return ref;
  const anon = /^anon-([A-Z]+)-v(\d+)$/.exec(ref);
  if (anon) {
    const lineage = Object.values(run.lineages).find((l) => l.letter === anon[1]);
    const version = Number(anon[2]);
    return lineage?.versions.find((id) => run.candidates[id].candidate.version === version);
  }
  if (run.reviews[ref]) return ref;
  const reviewRef = /^review-(\d+)$/.exec(ref);
  if (reviewRef) return run.review_order[Number(reviewRef[1]) - 1];
  const issue = /^(.*)#issue-(\d+)$/.exec(ref);
  if (issue) {
    const reviewId = resolveArtifactRef(run, issue[1]);
    const index = Number(issue[2]) - 1;
    if (reviewId && run.reviews[reviewId] && index >= 0 && index < run.reviews[reviewId].review.material_issues.length) {
      return reviewIssueId(reviewId, index);
    }
    return undefined;
  }
  for (const m of run.conflict_maps) {
    if (m.conflict_map.conflict_map_id === ref) return ref;
    if (m.conflict_map.conflicts.some((c) => c.conflict_id === ref)) return ref;
  }
  if (run.frame_checks.some((f) => f.frame_check.frame_check_id === ref)) return ref;
  if (run.goal_contract_revisions.some((g) => g.goal_contract.goal_contract_id === ref)) return ref;
  if (runEvidenceRefs(run).has(ref)) return ref;
  return undefined;
}

/** Evidence the run has seen: the GoalContract's evidence set and every cited evidence ref. */
export function runEvidenceRefs(run: RunData): Set<string> {
  const refs = new Set<string>();
  for (const g of run.goal_contract_revisions) g.goal_contract.evidence_set.forEach((e) => refs.add(e));
  for (const id of run.candidate_order) {
    const c = run.candidates[id].candidate;
    c.evidence_refs.forEach((e) => refs.add(e));
    c.claims.forEach((cl) => (typeof cl === 'string' ? undefined : (cl.evidence_refs ?? []).forEach((e) => refs.add(e))));
  }
  for (const id of run.review_order) {
    const r = run.reviews[id].review;
    r.material_issues.forEach((m) => m.evidence_refs.forEach((e) => refs.add(e)));
    r.test_results?.evidence_refs.forEach((e) => refs.add(e));
  }
  for (const f of run.frame_checks) if (f.frame_check.result === 'frame-challenge') f.frame_check.evidence_refs.forEach((e) => refs.add(e));
  return refs;
}
