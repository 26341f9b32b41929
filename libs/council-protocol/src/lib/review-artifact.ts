import { DECISION_IMPACT_TARGETS, DecisionImpactTarget, LEVELS_OF_THREE, Severity } from './contracts';
import { ReviewTestResults, parseReviewTestResults } from './evaluation/test-results';
import { arr, artifactId, fail, isRecord, join, optStr, record, str, strings, oneOf } from './validation';

/** A material issue (spec 8.3). `could_change` (extension) names what it could change (section 12). */
export interface MaterialIssue {
  claim: string;
  evidence_refs: string[];
  severity: Severity;
  revision_request: string;
  could_change?: DecisionImpactTarget[];
}

/**
 * ReviewArtifact (spec 8.3). Reviews target artifacts, never model identities. `test_results`
 * (extension, 15.1): the executable tests the reviewer ran on the target candidate version, which
 * test-first elimination reads.
 */
export interface ReviewArtifact {
  review_id: string;
  reviewer_member_id: string;
  target_candidate_id: string;
  rubric_scores: Record<string, number>;
  strengths: string[];
  material_issues: MaterialIssue[];
  blind_spot_candidate?: string;
  ranking?: string[];
  test_results?: ReviewTestResults;
}

/** Issue id as the spec writes it: `<review_id>#issue-<n>`, n from 1. */
export function reviewIssueId(reviewId: string, index: number): string {
  return `${reviewId}#issue-${index + 1}`;
}

function parseIssue(input: unknown, path: string): MaterialIssue {
  const o = record(input, path);
  const issue: MaterialIssue = {
    claim: str(o, 'claim', path),
    evidence_refs: strings(o, 'evidence_refs', path, { optional: true }),
    severity: oneOf(o, 'severity', path, LEVELS_OF_THREE),
    revision_request: str(o, 'revision_request', path),
  };
  if (o['could_change'] !== undefined) {
    issue.could_change = arr(o, 'could_change', path).map((t, i) => {
      if (typeof t !== 'string' || !(DECISION_IMPACT_TARGETS as readonly string[]).includes(t)) {
        fail(join(join(path, 'could_change'), i), `must be one of ${DECISION_IMPACT_TARGETS.join(' | ')}`);
      }
      return t as DecisionImpactTarget;
    });
  }
  return issue;
}

/**
 * Validate a ReviewArtifact. Checklist item 5: a review identifies material issues, not only a
 * ranking, so a review with neither rubric scores nor material issues is refused.
 */
export function parseReviewArtifact(input: unknown, path = ''): ReviewArtifact {
  const o = record(input, path);
  const scoresIn = o['rubric_scores'];
  if (!isRecord(scoresIn)) fail(join(path, 'rubric_scores'), 'must be an object of criterion → number');
  const rubric_scores: Record<string, number> = {};
  for (const [k, v] of Object.entries(scoresIn)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail(join(join(path, 'rubric_scores'), k), 'must be a number >= 0');
    rubric_scores[k] = v;
  }
  const material_issues = arr(o, 'material_issues', path).map((m, i) => parseIssue(m, join(join(path, 'material_issues'), i)));
  if (material_issues.length === 0 && Object.keys(rubric_scores).length === 0) {
    fail(join(path, 'material_issues'), 'a review must identify material issues or score the rubric, not only rank');
  }
  const review: ReviewArtifact = {
    review_id: artifactId(o, 'review_id', path),
    reviewer_member_id: str(o, 'reviewer_member_id', path),
    target_candidate_id: str(o, 'target_candidate_id', path),
    rubric_scores,
    strengths: strings(o, 'strengths', path, { optional: true }),
    material_issues,
  };
  const blind = optStr(o, 'blind_spot_candidate', path);
  if (blind !== undefined) review.blind_spot_candidate = blind;
  if (o['ranking'] !== undefined && o['ranking'] !== null) review.ranking = strings(o, 'ranking', path);
  if (o['test_results'] !== undefined) review.test_results = parseReviewTestResults(o['test_results'], join(path, 'test_results'));
  return review;
}

/** Mean rubric score of a review, or null when it scored nothing. */
export function meanRubricScore(review: ReviewArtifact): number | null {
  const values = Object.values(review.rubric_scores);
  if (values.length === 0) return null;
  return values.reduce((a, b) => a + b, 0) / values.length;
}
