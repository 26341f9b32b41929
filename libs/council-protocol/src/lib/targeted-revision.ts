import { CouncilError } from './errors';
import { RevisionRequestEntry, SelectedIssue } from './events';
import { MaterialIssue, reviewIssueId } from './review-artifact';
import { RevisionArtifact } from './revision-artifact';
import { blindReviewRef, scrubMemberIds } from './review-and-anonymity';
import { authorOf, candidate } from './run-queries';
import { RunData } from './state';

/**
 * Spec section 12: revise only what can change the decision. An issue is decision-relevant
 * when it is not low severity and names what it could change (recommendation, confidence,
 * risk controls, actions, reversal conditions, GoalContract). An issue that names nothing is
 * taken as decision-relevant only when its severity is high; low-impact style never justifies
 * a round.
 */
export function isDecisionRelevantIssue(issue: MaterialIssue): boolean {
  if (issue.severity === 'low') return false;
  if (issue.could_change === undefined) return issue.severity === 'high';
  return issue.could_change.length > 0;
}

const SEVERITY_RANK = { high: 0, medium: 1, low: 2 } as const;

/** Issues already rejected with a reason on this lineage are retained as dissent, not re-asked. */
function retainedClaims(run: RunData, lineageId: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const id of run.lineages[lineageId]?.versions ?? []) {
    const c = run.candidates[id].candidate;
    if (!('responses' in c)) continue;
    for (const r of c.responses) {
      if (r.disposition !== 'rejected') continue;
      const [reviewId, n] = r.review_issue.split('#issue-');
      const issue = run.reviews[reviewId]?.review.material_issues[Number(n) - 1];
      if (issue) out.set(issue.claim.trim().toLowerCase(), new Set(issue.evidence_refs));
    }
  }
  return out;
}

/**
 * Select the targeted issues for each current candidate from the reviews of `round`:
 * decision-relevant, not a repeated objection without new evidence (17.3), at most
 * `max_issues_per_candidate` per candidate, highest severity first (a bounded question).
 */
export function selectTargetedIssues(run: RunData, candidateIds: readonly string[], round: number): RevisionRequestEntry[] {
  const out: RevisionRequestEntry[] = [];
  for (const candidateId of candidateIds) {
    const stored = run.candidates[candidateId];
    if (!stored) continue;
    const retained = retainedClaims(run, stored.lineage_id);
    const issues: SelectedIssue[] = [];
    for (const reviewId of run.review_order) {
      const { review, round: r, generation } = run.reviews[reviewId];
      if (r !== round || generation !== run.generation || review.target_candidate_id !== candidateId) continue;
      review.material_issues.forEach((issue, i) => {
        if (!isDecisionRelevantIssue(issue)) return;
        const prior = retained.get(issue.claim.trim().toLowerCase());
        if (prior && issue.evidence_refs.every((e) => prior.has(e))) return;
        issues.push({
          issue_id: reviewIssueId(reviewId, i),
          review_id: reviewId,
          target_candidate_id: candidateId,
          claim: issue.claim,
          severity: issue.severity,
          revision_request: issue.revision_request,
          could_change: issue.could_change ?? ['recommendation'],
          evidence_refs: issue.evidence_refs,
        });
      });
    }
    issues.sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity]);
    const bounded = issues.slice(0, run.policy.max_issues_per_candidate);
    if (bounded.length > 0)
      out.push({ target_candidate_id: candidateId, author_member_id: stored.candidate.author_member_id, issues: bounded });
  }
  return out;
}

/**
 * A revision must point to its requested parent, keep its author, take the next version and
 * answer every selected issue (accepted with a change, or rejected with a reason). Anything
 * else is refused with the field that is wrong.
 */
export function checkRevisionAnswersSelectedIssues(
  run: RunData,
  revision: RevisionArtifact,
  request: RevisionRequestEntry,
  memberId: string,
): void {
  if (revision.parent_candidate_id !== request.target_candidate_id) {
    throw new CouncilError('LINEAGE_MISMATCH', `revision must point to its parent ${request.target_candidate_id}`, 'parent_candidate_id');
  }
  if (revision.author_member_id !== memberId || authorOf(run, request.target_candidate_id) !== memberId) {
    throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the author of a candidate revises it', 'author_member_id');
  }
  const parent = candidate(run, request.target_candidate_id);
  if (revision.version !== parent.version + 1) {
    throw new CouncilError('LINEAGE_MISMATCH', `version must be ${parent.version + 1}`, 'version');
  }
  if (run.candidates[revision.candidate_id]) {
    throw new CouncilError('DUPLICATE_ARTIFACT', `candidate ${revision.candidate_id} already exists`, 'candidate_id');
  }
  const answered = new Set(revision.responses.map((r) => r.review_issue));
  request.issues.forEach((issue) => {
    if (!answered.has(issue.issue_id)) {
      throw new CouncilError(
        'UNANSWERED_ISSUE',
        `selected issue ${issue.issue_id} needs a response (accepted or rejected with reason)`,
        'responses',
      );
    }
  });
  revision.responses.forEach((r, i) => {
    const [reviewId, n] = r.review_issue.split('#issue-');
    if (!run.reviews[reviewId]?.review.material_issues[Number(n) - 1]) {
      throw new CouncilError('UNKNOWN_REFERENCE', `no review issue ${r.review_issue} in this run`, `responses[${i}].review_issue`);
    }
  });
}

/**
 * Revision task inputs: the author's own candidate and the selected issues on it, named by
 * blind issue refs (`review-2#issue-1`) so reviewers stay anonymous to authors too.
 */
export function revisionTaskInputs(run: RunData, request: RevisionRequestEntry): Record<string, unknown> {
  const issues = request.issues.map((i) => ({
    issue_id: `${blindReviewRef(run, i.review_id)}#issue-${i.issue_id.split('#issue-')[1]}`,
    claim: i.claim,
    severity: i.severity,
    revision_request: i.revision_request,
    could_change: i.could_change,
    evidence_refs: i.evidence_refs,
  }));
  return {
    candidate: candidate(run, request.target_candidate_id),
    selected_issues: scrubMemberIds(
      issues,
      run.panel.map((m) => m.member_id),
    ),
    instructions:
      'Return a RevisionArtifact: parent_candidate_id = candidate.candidate_id, version + 1, one response per selected issue (review_issue = issue_id).',
  };
}
