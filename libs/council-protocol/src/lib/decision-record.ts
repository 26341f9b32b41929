import { CHAIR_MODES, CONFIDENCE_SCHEMES, ChairMode, Confidence, ConfidenceScheme, LEVELS_OF_THREE } from './contracts';
import { arr, fail, isRecord, join, optStr, record, str, strings, oneOf } from './validation';

export type DissentEntry = string | { description: string; refs?: string[] };

/** New speculation is allowed only labelled as such (spec section 14). */
export interface LabelledSpeculation {
  claim: string;
  label: 'speculation';
  sources?: string[];
}

/** A member failure as the controller saw it (spec section 18). */
export interface MemberFailureNote {
  member_id: string;
  role: string;
  stage: string;
  round: number;
  reason: string;
}

/**
 * DecisionRecord (spec 8.6). Extensions: `chair_mode` (section 14), `speculation` (14),
 * and `missing_perspectives` / `member_failures` (section 18), which the controller fills in:
 * they are facts of the run, not semantic judgements.
 */
export interface DecisionRecord {
  decision_id: string;
  goal_contract_id: string;
  selected_path: string;
  decision: string;
  grounded_in: string[];
  incorporated: string[];
  rejected: { artifact: string; reason: string }[];
  unresolved_dissent: DissentEntry[];
  actions: string[];
  stop_loss_conditions: string[];
  reversal_signals: string[];
  confidence_scheme: ConfidenceScheme;
  confidence: Confidence;
  decision_owner: string;
  chair_mode?: ChairMode;
  speculation?: LabelledSpeculation[];
  missing_perspectives?: string[];
  member_failures?: MemberFailureNote[];
}

export const NO_DECISION = 'no-decision';
export const SYNTHESIS = 'synthesis';

function parseDissent(input: unknown, path: string): DissentEntry {
  if (typeof input === 'string') {
    if (input.trim() === '') fail(path, 'must not be empty');
    return input;
  }
  if (!isRecord(input)) fail(path, 'must be a string or {description, refs}');
  const entry: { description: string; refs?: string[] } = { description: str(input, 'description', path) };
  if (input['refs'] !== undefined) entry.refs = strings(input, 'refs', path);
  return entry;
}

/**
 * Validate a DecisionRecord's shape. Checklist item 15: a decision (other than no-decision)
 * carries actions and reversal or stop-loss conditions, and dissent is always present (maybe
 * empty). Grounding against the run's artifacts is `checkDecisionGrounding` (section 14).
 */
export function parseDecisionRecord(input: unknown, path = ''): DecisionRecord {
  const o = record(input, path);
  const rec: DecisionRecord = {
    decision_id: str(o, 'decision_id', path),
    goal_contract_id: str(o, 'goal_contract_id', path),
    selected_path: str(o, 'selected_path', path),
    decision: str(o, 'decision', path),
    grounded_in: strings(o, 'grounded_in', path),
    incorporated: strings(o, 'incorporated', path, { optional: true }),
    rejected: arr(o, 'rejected', path, { optional: true }).map((r, i) => {
      const p = join(join(path, 'rejected'), i);
      const ro = record(r, p);
      return { artifact: str(ro, 'artifact', p), reason: str(ro, 'reason', p) };
    }),
    unresolved_dissent: arr(o, 'unresolved_dissent', path).map((d, i) => parseDissent(d, join(join(path, 'unresolved_dissent'), i))),
    actions: strings(o, 'actions', path, { optional: true }),
    stop_loss_conditions: strings(o, 'stop_loss_conditions', path, { optional: true }),
    reversal_signals: strings(o, 'reversal_signals', path, { optional: true }),
    confidence_scheme: oneOf(o, 'confidence_scheme', path, CONFIDENCE_SCHEMES),
    confidence: oneOf(o, 'confidence', path, LEVELS_OF_THREE),
    decision_owner: str(o, 'decision_owner', path),
  };
  const mode = optStr(o, 'chair_mode', path);
  if (mode !== undefined) rec.chair_mode = oneOf(o, 'chair_mode', path, CHAIR_MODES);
  if (o['speculation'] !== undefined) {
    rec.speculation = arr(o, 'speculation', path).map((s, i) => {
      const p = join(join(path, 'speculation'), i);
      const so = record(s, p);
      const item: LabelledSpeculation = { claim: str(so, 'claim', p), label: oneOf(so, 'label', p, ['speculation'] as const) };
      if (so['sources'] !== undefined) item.sources = strings(so, 'sources', p);
      return item;
    });
  }
  if (o['missing_perspectives'] !== undefined) rec.missing_perspectives = strings(o, 'missing_perspectives', path);
  if (o['member_failures'] !== undefined) {
    rec.member_failures = arr(o, 'member_failures', path).map((f, i) => {
      const p = join(join(path, 'member_failures'), i);
      const fo = record(f, p);
      const round = fo['round'];
      if (typeof round !== 'number') fail(join(p, 'round'), 'must be a number');
      return {
        member_id: str(fo, 'member_id', p),
        role: str(fo, 'role', p),
        stage: str(fo, 'stage', p),
        round,
        reason: str(fo, 'reason', p),
      };
    });
  }
  if (rec.selected_path !== NO_DECISION) {
    if (rec.actions.length === 0) fail(join(path, 'actions'), 'a decision names its actions');
    if (rec.stop_loss_conditions.length + rec.reversal_signals.length === 0) {
      fail(join(path, 'reversal_signals'), 'a decision names reversal signals or stop-loss conditions');
    }
  }
  return rec;
}

/**
 * The artifact ids a dissent entry refers to (explicit refs, or ids mentioned in the text). A
 * mention is the whole id, not a prefix of a longer one: `review-1#issue-1` is not in
 * `review-1#issue-10`, nor `c1` in `c10`.
 */
export function dissentMentions(entry: DissentEntry, id: string): boolean {
  const text = typeof entry === 'string' ? entry : entry.description;
  if (typeof entry !== 'string' && (entry.refs ?? []).includes(id)) return true;
  for (let at = text.indexOf(id); at >= 0; at = text.indexOf(id, at + 1)) {
    if (!ID_CHAR.test(text[at - 1] ?? '') && !ID_CHAR.test(text[at + id.length] ?? '')) return true;
  }
  return false;
}

/** Characters that continue an artifact id (letters, digits, `-`, `_`, `#`): a mention ends at none of them. */
const ID_CHAR = /[A-Za-z0-9_#-]/;
