import { CONFIDENCE_SCHEMES, Confidence, ConfidenceScheme, LEVELS_OF_THREE } from './contracts';
import { arr, artifactId, fail, isRecord, join, num, record, str, strings, oneOf, stableJson } from './validation';

/** A claim: a sentence, or a sentence with the evidence it rests on. */
export type CandidateClaim = string | { claim: string; evidence_refs?: string[] };

/** CandidateArtifact (spec 8.2). */
export interface CandidateArtifact {
  candidate_id: string;
  author_member_id: string;
  version: number;
  position: string;
  claims: CandidateClaim[];
  evidence_refs: string[];
  assumptions: string[];
  expected_outcomes: string[];
  risks: string[];
  reversal_signals: string[];
  actions: string[];
  confidence_scheme: ConfidenceScheme;
  confidence: Confidence;
  parent_candidate_id: string | null;
}

function parseClaims(o: Record<string, unknown>, path: string): CandidateClaim[] {
  return arr(o, 'claims', path, { optional: true }).map((c, i) => {
    const field = join(join(path, 'claims'), i);
    if (typeof c === 'string') {
      if (c.trim() === '') fail(field, 'must not be empty');
      return c;
    }
    if (!isRecord(c)) fail(field, 'must be a string or {claim, evidence_refs}');
    const claim: { claim: string; evidence_refs?: string[] } = { claim: str(c, 'claim', field) };
    if (c['evidence_refs'] !== undefined) claim.evidence_refs = strings(c, 'evidence_refs', field);
    return claim;
  });
}

/**
 * Validate a CandidateArtifact. Section 10: each candidate MUST state its position, supporting
 * evidence, assumptions, risks, confidence, reversal conditions and action implications, so
 * those are required (evidence as claims or evidence_refs, at least one).
 */
export function parseCandidateArtifact(input: unknown, path = ''): CandidateArtifact {
  const o = record(input, path);
  const claims = parseClaims(o, path);
  const evidenceRefs = strings(o, 'evidence_refs', path);
  if (claims.length + evidenceRefs.length === 0)
    fail(join(path, 'evidence_refs'), 'a candidate must state supporting evidence (claims or evidence_refs)');
  const parent = o['parent_candidate_id'];
  if (parent !== undefined && parent !== null && (typeof parent !== 'string' || parent.trim() === '')) {
    fail(join(path, 'parent_candidate_id'), 'must be a candidate id or null');
  }
  return {
    candidate_id: artifactId(o, 'candidate_id', path),
    author_member_id: str(o, 'author_member_id', path),
    version: num(o, 'version', path, { min: 1, integer: true }),
    position: str(o, 'position', path),
    claims,
    evidence_refs: evidenceRefs,
    assumptions: strings(o, 'assumptions', path),
    expected_outcomes: strings(o, 'expected_outcomes', path, { optional: true }),
    risks: strings(o, 'risks', path, { nonEmpty: true }),
    reversal_signals: strings(o, 'reversal_signals', path, { nonEmpty: true }),
    actions: strings(o, 'actions', path, { nonEmpty: true }),
    confidence_scheme: oneOf(o, 'confidence_scheme', path, CONFIDENCE_SCHEMES),
    confidence: oneOf(o, 'confidence', path, LEVELS_OF_THREE),
    parent_candidate_id: typeof parent === 'string' ? parent : null,
  };
}

/** The fields whose change can change a decision (used by 17.2 and 17.3). */
export const DECISION_RELEVANT_FIELDS = ['position', 'confidence', 'risks', 'actions', 'reversal_signals', 'expected_outcomes'] as const;

/** Fingerprint of a candidate's decision-relevant fields: equal fingerprints mean no decision change. */
export function decisionFingerprint(candidate: CandidateArtifact): string {
  const picked: Record<string, unknown> = {};
  for (const f of DECISION_RELEVANT_FIELDS) picked[f] = candidate[f];
  return stableJson(picked);
}
