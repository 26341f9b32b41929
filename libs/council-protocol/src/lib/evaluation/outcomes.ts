import { DecisionRecord } from '../decision-record';
import { CouncilError } from '../errors';
import { arr, fail, instantMs, join, oneOf, record, str, strings } from '../validation';

/** Where an outcome comes from (spec 15.4, in its order of preference), or `unknown` (18). */
export const OUTCOME_SOURCE_KINDS = [
  'test-result',
  'operational-observation',
  'prediction-score',
  'user-adoption',
  'incident',
  'rollback',
  'stop-loss',
  'delayed-human-review',
  'unknown',
] as const;
export type OutcomeSourceKind = (typeof OUTCOME_SOURCE_KINDS)[number];

export const OUTCOME_VERDICTS = ['success', 'failure', 'mixed', 'unknown'] as const;
export type OutcomeVerdict = (typeof OUTCOME_VERDICTS)[number];

export const ACTION_STATUSES = ['done', 'partial', 'not-done', 'unknown'] as const;
export const EXPECTATION_STATUSES = ['met', 'not-met', 'unknown'] as const;

/** Who may record an outcome: the decision owner, or an evaluator the binding names. */
export type OutcomeRecorderRole = 'decision-owner' | 'evaluator';

/**
 * A structured outcome (spec 8.7 "later outcome feedback", 15.4), linked to one DecisionRecord:
 * what happened to its actions, its expected outcomes, its reversal signals and stop-loss
 * conditions. `unknown` is an explicit value everywhere: when no evaluator can tell, the outcome
 * says so and nothing is substituted for it (18: do not substitute peer confidence).
 */
export interface StructuredOutcome {
  outcome_id: string;
  decision_id: string;
  observed_at: string;
  recorded_by: string;
  recorder_role: OutcomeRecorderRole;
  source_kind: OutcomeSourceKind;
  verdict: OutcomeVerdict;
  actions: { action: string; status: (typeof ACTION_STATUSES)[number] }[];
  expected_outcomes: { expected: string; observed: (typeof EXPECTATION_STATUSES)[number] }[];
  reversal_signals: { signal: string; fired: boolean | 'unknown' }[];
  stop_loss_conditions: { condition: string; triggered: boolean | 'unknown' }[];
  summary: string;
  evidence_refs: string[];
}

/** What an outcome is checked against: the decision and the expected outcomes it acted on. */
export interface OutcomeContext {
  decision: DecisionRecord;
  /** Expected outcomes of the selected or incorporated candidates (8.2). */
  expected_outcomes: readonly string[];
  /** Evaluators the binding authorises besides the decision owner. */
  evaluators: readonly string[];
}

/** Decision owner or named evaluator; anyone else is refused (outcomes calibrate reputations). */
export function outcomeRecorderRole(actor: string, decision: DecisionRecord, evaluators: readonly string[]): OutcomeRecorderRole {
  if (actor === decision.decision_owner) return 'decision-owner';
  if (evaluators.includes(actor)) return 'evaluator';
  throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner or an authorised evaluator records outcomes', 'recorded_by');
}

function triState(o: Record<string, unknown>, key: string, path: string): boolean | 'unknown' {
  const v = o[key];
  if (v === true || v === false || v === 'unknown') return v;
  return fail(join(path, key), "must be true, false or 'unknown'");
}

function linked<T>(
  items: unknown[],
  path: string,
  key: string,
  allowed: readonly string[],
  what: string,
  build: (o: Record<string, unknown>, p: string, name: string) => T,
): T[] {
  const seen = new Set<string>();
  return items.map((item, i) => {
    const p = join(path, i);
    const o = record(item, p);
    const name = str(o, key, p);
    if (!allowed.includes(name)) throw new CouncilError('UNKNOWN_REFERENCE', `not one of the decision's ${what}`, join(p, key));
    if (seen.has(name)) fail(join(p, key), 'listed twice');
    seen.add(name);
    return build(o, p, name);
  });
}

/**
 * Validate an outcome against its decision. A known verdict needs external evidence; an
 * `unknown` source can only give an `unknown` verdict; a success with a fired reversal signal or
 * a triggered stop-loss contradicts itself and is refused.
 */
export function parseStructuredOutcome(input: unknown, context: OutcomeContext, path = 'outcome'): StructuredOutcome {
  const o = record(input, path);
  const decision = context.decision;
  const decisionId = str(o, 'decision_id', path);
  if (decisionId !== decision.decision_id)
    throw new CouncilError('UNKNOWN_REFERENCE', `the decision is ${decision.decision_id}`, join(path, 'decision_id'));
  const observedAt = str(o, 'observed_at', path);
  instantMs(observedAt, join(path, 'observed_at'));
  const recordedBy = str(o, 'recorded_by', path);
  const outcome: StructuredOutcome = {
    outcome_id: str(o, 'outcome_id', path),
    decision_id: decisionId,
    observed_at: observedAt,
    recorded_by: recordedBy,
    recorder_role: outcomeRecorderRole(recordedBy, decision, context.evaluators),
    source_kind: oneOf(o, 'source_kind', path, OUTCOME_SOURCE_KINDS),
    verdict: oneOf(o, 'verdict', path, OUTCOME_VERDICTS),
    actions: linked(
      arr(o, 'actions', path, { optional: true }),
      join(path, 'actions'),
      'action',
      decision.actions,
      'actions',
      (ao, p, action) => ({
        action,
        status: oneOf(ao, 'status', p, ACTION_STATUSES),
      }),
    ),
    expected_outcomes: linked(
      arr(o, 'expected_outcomes', path, { optional: true }),
      join(path, 'expected_outcomes'),
      'expected',
      context.expected_outcomes,
      'expected outcomes',
      (eo, p, expected) => ({
        expected,
        observed: oneOf(eo, 'observed', p, EXPECTATION_STATUSES),
      }),
    ),
    reversal_signals: linked(
      arr(o, 'reversal_signals', path, { optional: true }),
      join(path, 'reversal_signals'),
      'signal',
      decision.reversal_signals,
      'reversal signals',
      (so, p, signal) => ({
        signal,
        fired: triState(so, 'fired', p),
      }),
    ),
    stop_loss_conditions: linked(
      arr(o, 'stop_loss_conditions', path, { optional: true }),
      join(path, 'stop_loss_conditions'),
      'condition',
      decision.stop_loss_conditions,
      'stop-loss conditions',
      (so, p, condition) => ({
        condition,
        triggered: triState(so, 'triggered', p),
      }),
    ),
    summary: str(o, 'summary', path),
    evidence_refs: strings(o, 'evidence_refs', path, { optional: true }),
  };
  if (outcome.source_kind === 'unknown' && outcome.verdict !== 'unknown')
    fail(join(path, 'verdict'), "no evaluator could tell (source_kind 'unknown'): the verdict is 'unknown'");
  if (outcome.verdict !== 'unknown' && outcome.evidence_refs.length === 0)
    fail(join(path, 'evidence_refs'), 'a known verdict cites its external evidence');
  if (outcome.verdict === 'success') {
    if (outcome.reversal_signals.some((s) => s.fired === true)) fail(join(path, 'verdict'), 'a reversal signal fired: not a success');
    if (outcome.stop_loss_conditions.some((s) => s.triggered === true))
      fail(join(path, 'verdict'), 'a stop-loss condition triggered: not a success');
  }
  return outcome;
}

/**
 * The explicit unknown (spec 18: external evaluator unavailable): every action, expectation,
 * signal and condition of the decision listed as `unknown`, with the reason as the summary.
 */
export function unknownOutcome(
  args: { outcome_id: string; observed_at: string; recorded_by: string; reason: string },
  context: OutcomeContext,
): StructuredOutcome {
  const d = context.decision;
  return {
    outcome_id: args.outcome_id,
    decision_id: d.decision_id,
    observed_at: args.observed_at,
    recorded_by: args.recorded_by,
    recorder_role: outcomeRecorderRole(args.recorded_by, d, context.evaluators),
    source_kind: 'unknown',
    verdict: 'unknown',
    actions: d.actions.map((action) => ({ action, status: 'unknown' })),
    expected_outcomes: context.expected_outcomes.map((expected) => ({ expected, observed: 'unknown' })),
    reversal_signals: d.reversal_signals.map((signal) => ({ signal, fired: 'unknown' })),
    stop_loss_conditions: d.stop_loss_conditions.map((condition) => ({ condition, triggered: 'unknown' })),
    summary: args.reason,
    evidence_refs: [],
  };
}

/** Success as a number for scoring: 1, 0, or null when there is nothing binary to score. */
export function outcomeValue(outcome: StructuredOutcome): 1 | 0 | null {
  return outcome.verdict === 'success' ? 1 : outcome.verdict === 'failure' ? 0 : null;
}

/**
 * The outcome that stands for a decision: the latest known verdict (a later evaluation supersedes
 * an earlier one), else null. Ties on observed_at go to the later outcome id, so it is stable.
 */
export function standingOutcome(outcomes: readonly StructuredOutcome[], decisionId: string): StructuredOutcome | null {
  const known = outcomes.filter((o) => o.decision_id === decisionId && o.verdict !== 'unknown');
  known.sort(
    (a, b) =>
      instantMs(a.observed_at, 'observed_at') - instantMs(b.observed_at, 'observed_at') ||
      (a.outcome_id < b.outcome_id ? -1 : a.outcome_id > b.outcome_id ? 1 : 0),
  );
  return known.length ? known[known.length - 1] : null;
}
