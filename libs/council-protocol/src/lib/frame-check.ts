import { fail, join, optStr, record, str, strings, oneOf } from './validation';

export const FRAME_EXCLUSION_KINDS = ['stakeholder', 'boundary', 'timescale', 'goal'] as const;
export type FrameExclusionKind = (typeof FRAME_EXCLUSION_KINDS)[number];

export interface FrameHolds {
  frame_check_id: string;
  observer_member_id: string;
  result: 'frame-holds';
  note?: string;
}

/** A frame-challenge (spec section 13) must carry all five parts. */
export interface FrameChallenge {
  frame_check_id: string;
  observer_member_id: string;
  result: 'frame-challenge';
  assumed_frame: string;
  excluded: { kind: FrameExclusionKind; description: string };
  evidence_refs: string[];
  inference?: string;
  reversal_signal: string;
  re_entry_action: string;
}

/** The Inside-Outsider frame check artifact: frame-holds or frame-challenge. Never ranked. */
export type FrameCheck = FrameHolds | FrameChallenge;

export function parseFrameCheck(input: unknown, path = ''): FrameCheck {
  const o = record(input, path);
  const result = oneOf(o, 'result', path, ['frame-holds', 'frame-challenge'] as const);
  const base = { frame_check_id: str(o, 'frame_check_id', path), observer_member_id: str(o, 'observer_member_id', path) };
  if (result === 'frame-holds') {
    const note = optStr(o, 'note', path);
    return note === undefined ? { ...base, result } : { ...base, result, note };
  }
  const excludedPath = join(path, 'excluded');
  const ex = record(o['excluded'], excludedPath);
  const challenge: FrameChallenge = {
    ...base,
    result,
    assumed_frame: str(o, 'assumed_frame', path),
    excluded: { kind: oneOf(ex, 'kind', excludedPath, FRAME_EXCLUSION_KINDS), description: str(ex, 'description', excludedPath) },
    evidence_refs: strings(o, 'evidence_refs', path, { optional: true }),
    reversal_signal: str(o, 'reversal_signal', path),
    re_entry_action: str(o, 're_entry_action', path),
  };
  const inference = optStr(o, 'inference', path);
  if (inference !== undefined) challenge.inference = inference;
  // "evidence or explicit inference": a challenge with neither is unsourced.
  if (challenge.evidence_refs.length === 0 && inference === undefined)
    fail(join(path, 'evidence_refs'), 'a frame-challenge needs evidence_refs or an explicit inference');
  return challenge;
}
