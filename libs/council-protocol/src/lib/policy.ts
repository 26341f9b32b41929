import { COUNCIL_LEVELS, CouncilLevel, TaskStage, levelNumber } from './contracts';
import { fail, join, num, optBool, optNum, record, strings } from './validation';
import { AggregationMethod, parseAggregationMethod } from './evaluation/aggregation';
import { CapabilityOptions, parseCapabilityOptions } from './evaluation/capability';
import { ChairSelectionPolicy, parseChairSelectionPolicy } from './evaluation/chair-selection';
import { ConfidenceProbabilities, checkConfidenceProbabilities } from './evaluation/calibration';

/**
 * The binding's process policy: what the controller enforces deterministically. Budgets live
 * in the GoalContract (spec 8.1); everything else the controller needs is here.
 */
export interface CouncilPolicy {
  /** Claimed level, council:L0 to council:L5; L4 needs an `aggregation`. */
  level: CouncilLevel;
  /** Minimum valid quorum (17.1): members still standing, and valid initial candidates. */
  min_quorum: number;
  /** Per-stage timeout (17.1), default for every stage. */
  stage_timeout_ms: number;
  /** Per-stage overrides, e.g. a longer synthesis. */
  stage_timeouts_ms: Partial<Record<TaskStage | 'frame-decision', number>>;
  /** 17.2: stop when the best score gains less than this ... */
  marginal_gain_threshold: number;
  /** ... for this many consecutive rounds. */
  plateau_rounds: number;
  /** 17.3: a drop larger than this below the best checkpoint is a regression. */
  regression_tolerance: number;
  /** Section 12: a round asks a bounded question, at most this many issues per candidate. */
  max_issues_per_candidate: number;
  /** Section 18: a high-risk run stops rather than synthesise from an incomplete panel. */
  stop_high_risk_on_missing_perspective: boolean;
  /** The controller's actor id; never a member id (Controller is not Chair, 7.1). */
  controller_id: string;
  /** Chair and its authorised fallbacks, in order; default: members holding `chair`. */
  chair_order: string[];
  /** The common rubric reviewers see (11.1). */
  rubric: string[];
  /** Participants (not on the panel) who may read the RunRecord, never the anonymisation mapping. */
  observers: string[];
  /**
   * council:L4 (15.2): how the review stage's artifacts are aggregated at each checkpoint and
   * shown to the chair. Absent: the mean rubric score only (council:L0 to L3).
   */
  aggregation?: AggregationMethod;
  /** council:L4 (14, 16.6): how the service picks the chair from the capability projection. */
  chair_selection?: ChairSelectionPolicy;
  /** council:L4 (15.3): the capability projection's prior, evidence weights and version policy. */
  capability?: CapabilityOptions;
  /** council:L5 (15.4): who may record outcomes besides the decision owner. */
  evaluators?: string[];
  /** council:L5 (15.4): ordinal confidence as a probability, for calibration. */
  confidence_probabilities?: ConfidenceProbabilities;
}

export const DEFAULT_RUBRIC = ['evidence', 'correctness', 'executability', 'risk_coverage'];

export const DEFAULT_POLICY: CouncilPolicy = {
  level: 'council:L3',
  min_quorum: 2,
  stage_timeout_ms: 120_000,
  stage_timeouts_ms: {},
  marginal_gain_threshold: 0.1,
  plateau_rounds: 2,
  regression_tolerance: 0,
  max_issues_per_candidate: 3,
  stop_high_risk_on_missing_perspective: true,
  controller_id: 'council-controller',
  chair_order: [],
  rubric: DEFAULT_RUBRIC,
  observers: [],
};

const STAGE_KEYS = ['proposal', 'review', 'conflict-map', 'frame-check', 'frame-decision', 'revision', 'synthesis'];

/** Validate a policy, filling defaults. Unknown input in, CouncilPolicy or a typed error out. */
export function parseCouncilPolicy(input: unknown, path = 'policy'): CouncilPolicy {
  const o = input === undefined || input === null ? {} : record(input, path);
  const p: CouncilPolicy = { ...DEFAULT_POLICY, stage_timeouts_ms: {}, rubric: [...DEFAULT_RUBRIC], observers: [] };
  if (o['level'] !== undefined) {
    if (typeof o['level'] !== 'string' || !(COUNCIL_LEVELS as readonly string[]).includes(o['level'])) {
      fail(join(path, 'level'), `must be one of ${COUNCIL_LEVELS.join(' | ')}`);
    }
    p.level = o['level'] as CouncilLevel;
  }
  p.min_quorum = optNum(o, 'min_quorum', path, { min: 1, integer: true }) ?? p.min_quorum;
  p.stage_timeout_ms = optNum(o, 'stage_timeout_ms', path, { min: 1 }) ?? p.stage_timeout_ms;
  if (o['stage_timeouts_ms'] !== undefined) {
    const t = record(o['stage_timeouts_ms'], join(path, 'stage_timeouts_ms'));
    for (const k of Object.keys(t)) {
      if (!STAGE_KEYS.includes(k)) fail(join(join(path, 'stage_timeouts_ms'), k), `unknown stage; one of ${STAGE_KEYS.join(' | ')}`);
      p.stage_timeouts_ms[k as TaskStage] = num(t, k, join(path, 'stage_timeouts_ms'), { min: 1 });
    }
  }
  p.marginal_gain_threshold = optNum(o, 'marginal_gain_threshold', path, { min: 0 }) ?? p.marginal_gain_threshold;
  p.plateau_rounds = optNum(o, 'plateau_rounds', path, { min: 1, integer: true }) ?? p.plateau_rounds;
  p.regression_tolerance = optNum(o, 'regression_tolerance', path, { min: 0 }) ?? p.regression_tolerance;
  p.max_issues_per_candidate = optNum(o, 'max_issues_per_candidate', path, { min: 1, integer: true }) ?? p.max_issues_per_candidate;
  p.stop_high_risk_on_missing_perspective =
    optBool(o, 'stop_high_risk_on_missing_perspective', path) ?? p.stop_high_risk_on_missing_perspective;
  if (o['controller_id'] !== undefined) {
    if (typeof o['controller_id'] !== 'string' || o['controller_id'] === '')
      fail(join(path, 'controller_id'), 'must be a non-empty string');
    p.controller_id = o['controller_id'];
  }
  if (o['chair_order'] !== undefined) p.chair_order = strings(o, 'chair_order', path);
  if (o['rubric'] !== undefined) p.rubric = strings(o, 'rubric', path, { nonEmpty: true });
  if (o['observers'] !== undefined) p.observers = strings(o, 'observers', path);
  parseEvaluationPolicy(o, path, p);
  return p;
}

/** The council:L4 and L5 keys: validated with their field path; L4 and above need an aggregation. */
function parseEvaluationPolicy(o: Record<string, unknown>, path: string, p: CouncilPolicy): void {
  if (o['aggregation'] !== undefined) p.aggregation = parseAggregationMethod(o['aggregation'], join(path, 'aggregation'), p.rubric);
  else if (levelNumber(p.level) >= 4) fail(join(path, 'aggregation'), `${p.level} needs an aggregation method (15.2)`);
  if (o['chair_selection'] !== undefined)
    p.chair_selection = parseChairSelectionPolicy(o['chair_selection'], join(path, 'chair_selection'));
  if (o['capability'] !== undefined) p.capability = parseCapabilityOptions(o['capability'], join(path, 'capability'));
  if (o['evaluators'] !== undefined) p.evaluators = strings(o, 'evaluators', path);
  if (o['confidence_probabilities'] !== undefined) {
    const c = record(o['confidence_probabilities'], join(path, 'confidence_probabilities'));
    const at = join(path, 'confidence_probabilities');
    p.confidence_probabilities = checkConfidenceProbabilities(
      {
        low: num(c, 'low', at, { min: 0, max: 1 }),
        medium: num(c, 'medium', at, { min: 0, max: 1 }),
        high: num(c, 'high', at, { min: 0, max: 1 }),
      },
      at,
    );
  }
}

export function stageTimeoutMs(policy: CouncilPolicy, stage: TaskStage | 'frame-decision'): number {
  return policy.stage_timeouts_ms[stage] ?? policy.stage_timeout_ms;
}
