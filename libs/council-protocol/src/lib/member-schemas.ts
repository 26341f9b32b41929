import {
  CHAIR_MODES,
  CONFIDENCE_SCHEMES,
  CONFLICT_TYPES,
  DECISION_IMPACT_TARGETS,
  LEVELS_OF_THREE,
  TASK_STAGES,
  TaskStage,
} from './contracts';
import { CONFLICT_STATUSES } from './conflict-map';
import { FRAME_EXCLUSION_KINDS } from './frame-check';

/**
 * The member API as JSON Schema (2020-12): what a member receives for each stage, what it
 * answers, and the messages around them. Served on `<prefix>.v1.schemas` so that a member in
 * any language can validate both directions; the controller and the SDK validate against the
 * same objects (member-answers.ts).
 *
 * Answers are strict (`additionalProperties: false`): an unknown field is refused by name, never
 * dropped. Tasks are strict on their envelope only: the controller may add inputs (the chair's
 * inputs grow with council:L4), and a member ignores inputs it does not know.
 *
 * The bookkeeping fields the controller stamps (member-answers.ts, STAMPED_FIELDS) are optional
 * here: a member that sends one anyway must send the stamped value.
 */
export const MEMBER_API_SCHEMA_VERSION = '1';

const $schema = 'https://json-schema.org/draft/2020-12/schema';
const text = { type: 'string', pattern: '\\S' } as const;
const texts = { type: 'array', items: text } as const;
const someTexts = { type: 'array', items: text, minItems: 1 } as const;
const level = { enum: [...LEVELS_OF_THREE] } as const;
const confidenceScheme = { enum: [...CONFIDENCE_SCHEMES] } as const;

const claim = {
  anyOf: [text, { type: 'object', additionalProperties: false, required: ['claim'], properties: { claim: text, evidence_refs: texts } }],
} as const;

const candidateProperties = {
  // Stamped by the controller.
  candidate_id: text,
  author_member_id: text,
  version: { type: 'integer', minimum: 1 },
  parent_candidate_id: { anyOf: [text, { type: 'null' }] },
  confidence_scheme: confidenceScheme,
  // Content.
  position: text,
  claims: { type: 'array', items: claim },
  evidence_refs: texts,
  assumptions: texts,
  expected_outcomes: texts,
  risks: someTexts,
  reversal_signals: someTexts,
  actions: someTexts,
  confidence: level,
} as const;
const candidateRequired = ['position', 'evidence_refs', 'assumptions', 'risks', 'reversal_signals', 'actions', 'confidence'] as const;
// Section 10: supporting evidence, as claims or evidence_refs (at least one).
const someEvidence = {
  anyOf: [{ required: ['claims'], properties: { claims: { minItems: 1 } } }, { properties: { evidence_refs: { minItems: 1 } } }],
} as const;

export const CANDIDATE_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/proposal',
  title: 'Proposal answer: a CandidateArtifact without its bookkeeping (spec 8.2)',
  type: 'object',
  additionalProperties: false,
  required: candidateRequired,
  properties: candidateProperties,
  ...someEvidence,
} as const;

const revisionResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['review_issue', 'disposition'],
  properties: { review_issue: text, disposition: { enum: ['accepted', 'rejected'] }, change: text, reason: text },
  // A rejection keeps its reason (spec 8.4); an acceptance says what changed.
  if: { properties: { disposition: { const: 'rejected' } } },
  then: { required: ['reason'] },
  else: { required: ['change'] },
} as const;

export const REVISION_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/revision',
  title: 'Revision answer: a RevisionArtifact without its bookkeeping (spec 8.4)',
  type: 'object',
  additionalProperties: false,
  required: [...candidateRequired, 'responses'],
  properties: { ...candidateProperties, responses: { type: 'array', items: revisionResponse } },
  ...someEvidence,
} as const;

const materialIssue = {
  type: 'object',
  additionalProperties: false,
  required: ['claim', 'severity', 'revision_request'],
  properties: {
    claim: text,
    evidence_refs: texts,
    severity: level,
    revision_request: text,
    could_change: { type: 'array', items: { enum: [...DECISION_IMPACT_TARGETS] } },
  },
} as const;

/** Executable tests the reviewer ran on the target candidate version (15.1), for test-first elimination. */
const testResults = {
  type: 'object',
  additionalProperties: false,
  required: ['suite_ref', 'passed', 'failed', 'evidence_refs'],
  properties: {
    suite_ref: text,
    passed: { type: 'integer', minimum: 0 },
    failed: { type: 'integer', minimum: 0 },
    evidence_refs: someTexts,
  },
  // A report counts at least one test.
  anyOf: [{ properties: { passed: { minimum: 1 } } }, { properties: { failed: { minimum: 1 } } }],
} as const;

const reviewProperties = {
  // Stamped by the controller.
  review_id: text,
  reviewer_member_id: text,
  // Content: the target is the candidate_ref the task showed.
  target_candidate_id: text,
  rubric_scores: { type: 'object', additionalProperties: { type: 'number', minimum: 0 } },
  strengths: texts,
  material_issues: { type: 'array', items: materialIssue },
  blind_spot_candidate: text,
  ranking: texts,
  test_results: testResults,
} as const;

export const REVIEW_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['target_candidate_id', 'rubric_scores', 'material_issues'],
  properties: reviewProperties,
  // Checklist 5: a review identifies material issues or scores the rubric, not only a ranking.
  anyOf: [{ properties: { rubric_scores: { minProperties: 1 } } }, { properties: { material_issues: { minItems: 1 } } }],
} as const;

export const REVIEW_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/review',
  title:
    'Review answer: one ReviewArtifact per candidate shown, without bookkeeping (spec 8.3); a bare array or one review reads as {reviews}',
  type: 'object',
  additionalProperties: false,
  required: ['reviews'],
  properties: { reviews: { type: 'array', minItems: 1, items: REVIEW_SCHEMA } },
} as const;

const conflict = {
  type: 'object',
  additionalProperties: false,
  required: ['conflict_id', 'type', 'positions', 'description', 'decision_impact', 'status'],
  properties: {
    conflict_id: text,
    type: { enum: [...CONFLICT_TYPES] },
    positions: someTexts,
    description: text,
    discriminating_evidence: text,
    value_owner: text,
    decision_impact: level,
    status: { enum: [...CONFLICT_STATUSES] },
  },
} as const;

export const CONFLICT_MAP_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/conflict-map',
  title: 'Conflict-map answer: a ConflictMap (spec 8.5); conflict_map_id defaults to the task id',
  type: 'object',
  additionalProperties: false,
  required: ['conflicts'],
  properties: { conflict_map_id: text, conflicts: { type: 'array', items: conflict } },
} as const;

export const FRAME_CHECK_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/frame-check',
  title: 'Frame-check answer: frame-holds or a sourced frame-challenge (spec 13); frame_check_id defaults to the task id',
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: {
    // Stamped by the controller.
    observer_member_id: text,
    // Content.
    frame_check_id: text,
    result: { enum: ['frame-holds', 'frame-challenge'] },
    note: text,
    assumed_frame: text,
    excluded: {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'description'],
      properties: { kind: { enum: [...FRAME_EXCLUSION_KINDS] }, description: text },
    },
    evidence_refs: texts,
    inference: text,
    reversal_signal: text,
    re_entry_action: text,
  },
  if: { properties: { result: { const: 'frame-challenge' } } },
  then: {
    required: ['assumed_frame', 'excluded', 'reversal_signal', 're_entry_action'],
    anyOf: [{ required: ['inference'] }, { required: ['evidence_refs'], properties: { evidence_refs: { minItems: 1 } } }],
  },
} as const;

export const DECISION_ANSWER_SCHEMA = {
  $schema,
  $id: 'council.v1/answers/synthesis',
  title: "Synthesis answer: the chair's DecisionRecord without its bookkeeping (spec 8.6, 14)",
  type: 'object',
  additionalProperties: false,
  required: ['selected_path', 'decision', 'grounded_in', 'unresolved_dissent', 'confidence'],
  properties: {
    // Stamped by the controller.
    decision_id: text,
    goal_contract_id: text,
    decision_owner: text,
    confidence_scheme: confidenceScheme,
    // Content.
    selected_path: text,
    decision: text,
    grounded_in: texts,
    incorporated: texts,
    rejected: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['artifact', 'reason'],
        properties: { artifact: text, reason: text },
      },
    },
    unresolved_dissent: {
      type: 'array',
      items: {
        anyOf: [
          text,
          { type: 'object', additionalProperties: false, required: ['description'], properties: { description: text, refs: texts } },
        ],
      },
    },
    actions: texts,
    stop_loss_conditions: texts,
    reversal_signals: texts,
    confidence: level,
    chair_mode: { enum: [...CHAIR_MODES] },
    speculation: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['claim', 'label'],
        properties: { claim: text, label: { const: 'speculation' }, sources: texts },
      },
    },
  },
} as const;

export const ANSWER_SCHEMAS = {
  proposal: CANDIDATE_ANSWER_SCHEMA,
  review: REVIEW_ANSWER_SCHEMA,
  'conflict-map': CONFLICT_MAP_ANSWER_SCHEMA,
  'frame-check': FRAME_CHECK_ANSWER_SCHEMA,
  revision: REVISION_ANSWER_SCHEMA,
  synthesis: DECISION_ANSWER_SCHEMA,
} as const satisfies Record<TaskStage, object>;

const usage = {
  type: 'object',
  additionalProperties: false,
  properties: { cost: { type: 'number', minimum: 0 }, tokens: { type: 'integer', minimum: 0 } },
} as const;
const errorBody = {
  type: 'object',
  required: ['code', 'message'],
  properties: { code: text, message: { type: 'string' }, field: { type: 'string' } },
} as const;
/** The controller's refusal: a RATE_LIMITED one says when to send the answer again. */
const verdictError = {
  ...errorBody,
  properties: { ...errorBody.properties, retry_after_ms: { type: 'integer', minimum: 0 } },
} as const;

/**
 * What a member publishes on `<prefix>.v1.answers.<member_id>` (a request: the reply is the
 * verdict). `ok: true` carries the stage's answer in `artifact`; `ok: false` reports that the
 * member cannot do the task. `usage` counts against the run's budget either way.
 */
export const ANSWER_MESSAGE_SCHEMA = {
  $schema,
  $id: 'council.v1/answer-message',
  type: 'object',
  additionalProperties: false,
  required: ['run_id', 'task_id', 'ok'],
  properties: { run_id: text, task_id: text, ok: { type: 'boolean' }, artifact: {}, error: errorBody, usage },
  if: { properties: { ok: { const: true } } },
  then: { required: ['artifact'], not: { required: ['error'] } },
  else: { required: ['error'], not: { required: ['artifact'] } },
} as const;

/** The controller's reply to an answer. `retry: false`: do not answer this task again (accepted, past its deadline or refused too often). */
export const VERDICT_SCHEMA = {
  $schema,
  $id: 'council.v1/verdict',
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'retry'],
  properties: { ok: { type: 'boolean' }, retry: { type: 'boolean' }, error: verdictError },
  if: { properties: { ok: { const: false } } },
  then: { required: ['error'] },
} as const;

/** On `<prefix>.v1.tasks.<member_id>` beside the tasks: stop working on a task (the run ended or the stage closed without it). */
export const CANCEL_NOTICE_SCHEMA = {
  $schema,
  $id: 'council.v1/cancel-notice',
  type: 'object',
  additionalProperties: false,
  required: ['notice', 'run_id', 'task_id', 'reason'],
  properties: {
    notice: { const: 'cancel' },
    run_id: text,
    task_id: text,
    reason: { enum: ['run-terminated', 'deadline-passed'] },
    note: text,
  },
} as const;

const blindCandidate = {
  type: 'object',
  required: ['label', 'candidate_ref', 'version', 'position'],
  properties: { label: text, candidate_ref: text, version: { type: 'integer', minimum: 1 }, position: text },
} as const;
const blindReview = {
  type: 'object',
  required: ['review_ref', 'target_ref', 'rubric_scores', 'material_issues'],
  properties: { review_ref: text, target_ref: text, rubric_scores: { type: 'object' }, material_issues: { type: 'array' } },
} as const;
const instructions = { type: 'string' } as const;

/** The inputs each stage's task carries at least (more may come; see above). */
const TASK_INPUTS = {
  proposal: { required: ['goal_contract'], properties: { goal_contract: { type: 'object' } } },
  review: {
    required: ['rubric', 'candidates'],
    properties: { rubric: texts, candidates: { type: 'array', items: blindCandidate }, instructions },
  },
  'conflict-map': {
    required: ['candidates', 'reviews'],
    properties: { candidates: { type: 'array', items: blindCandidate }, reviews: { type: 'array', items: blindReview }, instructions },
  },
  'frame-check': { required: ['candidates'], properties: { candidates: { type: 'array', items: blindCandidate }, instructions } },
  revision: {
    required: ['candidate', 'selected_issues'],
    properties: {
      candidate: { type: 'object', required: ['candidate_id', 'version', 'position'] },
      selected_issues: {
        type: 'array',
        items: { type: 'object', required: ['issue_id', 'claim', 'severity', 'revision_request'] },
      },
      instructions,
    },
  },
  synthesis: {
    required: ['candidates', 'reviews', 'required_dissent'],
    properties: {
      candidates: { type: 'array', items: blindCandidate },
      reviews: { type: 'array', items: blindReview },
      required_dissent: texts,
      instructions,
    },
  },
} as const satisfies Record<TaskStage, object>;

const goalContract = {
  type: 'object',
  required: ['goal_contract_id', 'question', 'goal', 'success_criteria', 'decision_owner', 'budget'],
  properties: {
    goal_contract_id: text,
    question: text,
    goal: text,
    success_criteria: texts,
    decision_owner: text,
    budget: { type: 'object' },
  },
} as const;

function taskSchema<S extends TaskStage>(stage: S) {
  return {
    $schema,
    $id: `council.v1/tasks/${stage}`,
    title: `The ${stage} task a member receives on <prefix>.v1.tasks.<member_id>`,
    type: 'object',
    additionalProperties: false,
    required: ['run_id', 'task_id', 'stage', 'role', 'deadline', 'goal_contract', 'inputs'],
    properties: {
      run_id: text,
      task_id: text,
      stage: { const: stage },
      role: text,
      deadline: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' },
      goal_contract: goalContract,
      inputs: { type: 'object', ...TASK_INPUTS[stage] },
      budget_remaining: {
        type: 'object',
        additionalProperties: false,
        required: ['rounds', 'time_ms'],
        properties: {
          rounds: { type: 'integer', minimum: 0 },
          time_ms: { type: 'number', minimum: 0 },
          cost: { type: 'number', minimum: 0 },
          tokens: { type: 'number', minimum: 0 },
        },
      },
    },
  } as const;
}

export const TASK_SCHEMAS = Object.fromEntries(TASK_STAGES.map((s) => [s, taskSchema(s)])) as {
  [S in TaskStage]: ReturnType<typeof taskSchema<S>>;
};

/** Everything served on `<prefix>.v1.schemas`. */
export function memberApiSchemas() {
  return {
    version: MEMBER_API_SCHEMA_VERSION,
    tasks: TASK_SCHEMAS,
    answers: ANSWER_SCHEMAS,
    answer_message: ANSWER_MESSAGE_SCHEMA,
    verdict: VERDICT_SCHEMA,
    cancel_notice: CANCEL_NOTICE_SCHEMA,
  };
}
