import { CandidateArtifact, parseCandidateArtifact } from './candidate-artifact';
import { arr, fail, join, record, str } from './validation';

export type RevisionResponse =
  | { review_issue: string; disposition: 'accepted'; change: string }
  | { review_issue: string; disposition: 'rejected'; reason: string };

/** RevisionArtifact (spec 8.4): a new CandidateArtifact plus a response map. */
export interface RevisionArtifact extends CandidateArtifact {
  parent_candidate_id: string;
  responses: RevisionResponse[];
}

function parseResponse(input: unknown, path: string): RevisionResponse {
  const o = record(input, path);
  const review_issue = str(o, 'review_issue', path);
  const disposition = o['disposition'];
  if (disposition === 'accepted') return { review_issue, disposition, change: str(o, 'change', path) };
  // A rejection without a reason is refused: dissent must stay explainable (spec 8.4).
  if (disposition === 'rejected') return { review_issue, disposition, reason: str(o, 'reason', path) };
  return fail(join(path, 'disposition'), 'must be accepted | rejected');
}

export function parseRevisionArtifact(input: unknown, path = ''): RevisionArtifact {
  const candidate = parseCandidateArtifact(input, path);
  const o = record(input, path);
  if (candidate.parent_candidate_id === null) fail(join(path, 'parent_candidate_id'), 'a revision must point to its parent candidate');
  if (candidate.version < 2) fail(join(path, 'version'), 'a revision has version >= 2');
  const responses = arr(o, 'responses', path).map((r, i) => parseResponse(r, join(join(path, 'responses'), i)));
  return { ...candidate, parent_candidate_id: candidate.parent_candidate_id, responses };
}
