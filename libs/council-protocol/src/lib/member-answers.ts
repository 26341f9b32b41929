import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import { CandidateArtifact, CandidateClaim } from './candidate-artifact';
import { CONFIDENCE_SCHEMES, TaskStage } from './contracts';
import { ConflictMap } from './conflict-map';
import { DecisionRecord } from './decision-record';
import { CouncilError } from './errors';
import { Usage } from './events';
import { FrameCheck } from './frame-check';
import { ANSWER_MESSAGE_SCHEMA, ANSWER_SCHEMAS, CANCEL_NOTICE_SCHEMA, TASK_SCHEMAS, VERDICT_SCHEMA } from './member-schemas';
import { resolveArtifactRef } from './review-and-anonymity';
import { ReviewArtifact } from './review-artifact';
import { RevisionArtifact } from './revision-artifact';
import { CouncilRunState, RunData, TaskRecord } from './state';
import { isRecord, stableJson } from './validation';

/*
 * The member API (DESIGN.md section 5): a member returns content only, the controller stamps the
 * bookkeeping it already knows, and both sides validate against the JSON Schemas of
 * member-schemas.ts. The types below are what the schemas describe; member-answers.spec.ts checks
 * that the two agree, in both directions.
 */

type Stamped<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** Proposal answer: a CandidateArtifact without candidate_id, author_member_id, version, parent_candidate_id, confidence_scheme. */
export type CandidateContent = Stamped<
  Omit<CandidateArtifact, 'claims' | 'expected_outcomes'> & { claims?: CandidateClaim[]; expected_outcomes?: string[] },
  'candidate_id' | 'author_member_id' | 'version' | 'parent_candidate_id' | 'confidence_scheme'
>;
/** Revision answer: the revised content and one response per selected issue. */
export type RevisionContent = CandidateContent & Pick<RevisionArtifact, 'responses'>;
/** One review, without review_id and reviewer_member_id; `target_candidate_id` is the candidate_ref shown. */
export type ReviewContent = Stamped<
  Omit<ReviewArtifact, 'strengths' | 'material_issues'> & {
    strengths?: string[];
    material_issues: (Omit<ReviewArtifact['material_issues'][number], 'evidence_refs'> & { evidence_refs?: string[] })[];
  },
  'review_id' | 'reviewer_member_id'
>;
export type ReviewsContent = { reviews: ReviewContent[] };
export type ConflictMapContent = Partial<Pick<ConflictMap, 'conflict_map_id'>> & Pick<ConflictMap, 'conflicts'>;
type FrameHoldsContent = Stamped<Extract<FrameCheck, { result: 'frame-holds' }>, 'frame_check_id' | 'observer_member_id'>;
type FrameChallengeContent = Stamped<
  Omit<Extract<FrameCheck, { result: 'frame-challenge' }>, 'evidence_refs'> & { evidence_refs?: string[] },
  'frame_check_id' | 'observer_member_id'
>;
export type FrameCheckContent = FrameHoldsContent | FrameChallengeContent;
/** The chair's answer: a DecisionRecord without its bookkeeping and without the controller's facts (missing perspectives, failures). */
export type DecisionContent = Stamped<
  Omit<
    DecisionRecord,
    'missing_perspectives' | 'member_failures' | 'incorporated' | 'rejected' | 'actions' | 'stop_loss_conditions' | 'reversal_signals'
  > &
    Partial<Pick<DecisionRecord, 'incorporated' | 'rejected' | 'actions' | 'stop_loss_conditions' | 'reversal_signals'>>,
  'decision_id' | 'goal_contract_id' | 'decision_owner' | 'confidence_scheme'
>;

/** What a member answers for each stage. */
export interface MemberAnswerContent {
  proposal: CandidateContent;
  review: ReviewsContent;
  'conflict-map': ConflictMapContent;
  'frame-check': FrameCheckContent;
  revision: RevisionContent;
  synthesis: DecisionContent;
}

/** Published on `<prefix>.v1.answers.<member_id>` as a request; the reply is a MemberVerdict. */
export type MemberAnswerMessage =
  | { run_id: string; task_id: string; ok: true; artifact: unknown; usage?: Usage }
  | { run_id: string; task_id: string; ok: false; error: { code: string; message: string; field?: string }; usage?: Usage };

/**
 * The controller's reply to an answer; `retry: false` means do not answer this task again. A
 * `RATE_LIMITED` refusal has `retry: true` and `retry_after_ms`: send the same answer again after it.
 */
export type MemberVerdict =
  | { ok: true; retry: false }
  | { ok: false; retry: boolean; error: { code: string; message: string; field?: string; retry_after_ms?: number } };

/** Sent beside tasks on `<prefix>.v1.tasks.<member_id>`: stop working on a task. */
export interface CancelNotice {
  notice: 'cancel';
  run_id: string;
  task_id: string;
  reason: 'run-terminated' | 'deadline-passed';
  note?: string;
}

/** The fields the controller stamps on each stage's answer (the member need not send them). */
export const STAMPED_FIELDS = {
  proposal: ['candidate_id', 'author_member_id', 'version', 'parent_candidate_id', 'confidence_scheme'],
  review: ['review_id', 'reviewer_member_id'],
  'conflict-map': [],
  'frame-check': ['observer_member_id'],
  revision: ['candidate_id', 'author_member_id', 'version', 'parent_candidate_id', 'confidence_scheme'],
  synthesis: ['decision_id', 'goal_contract_id', 'decision_owner', 'confidence_scheme'],
} as const satisfies Record<TaskStage, readonly string[]>;

// One compiler for the library: the schemas are data, compiled once; validation is pure.
// strictTypes off: subschemas inside anyOf/if constrain a property whose type the parent schema states.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
const compiled = new Map<object, ValidateFunction>();
/** The schema's validator, compiled once. */
export function compileSchema(schema: object): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

/** `/reviews/0/material_issues/1` → `reviews[0].material_issues[1]`. */
function fieldPath(prefix: string, pointer: string, extra?: string): string {
  let path = prefix;
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`;
  }
  if (extra !== undefined) path = path === '' ? extra : `${path}.${extra}`;
  return path === '' ? '(root)' : path;
}

/** The most useful error first: an unknown field by name, then a missing one, then the deepest. */
function firstError(errors: ErrorObject[]): ErrorObject {
  const rank = (e: ErrorObject) => (e.keyword === 'additionalProperties' ? 0 : e.keyword === 'required' ? 1 : 2);
  const concrete = errors.filter((e) => !['anyOf', 'oneOf', 'if', 'not'].includes(e.keyword));
  const pool = concrete.length ? concrete : errors;
  return [...pool].sort((a, b) => rank(a) - rank(b) || b.instancePath.length - a.instancePath.length)[0];
}

function schemaError(what: string, prefix: string, errors: ErrorObject[]): CouncilError {
  const e = firstError(errors);
  if (e.keyword === 'additionalProperties') {
    const name = String((e.params as { additionalProperty: string }).additionalProperty);
    return new CouncilError('SCHEMA_VIOLATION', `unknown field in ${what}: refused, not dropped`, fieldPath(prefix, e.instancePath, name));
  }
  if (e.keyword === 'required') {
    const name = String((e.params as { missingProperty: string }).missingProperty);
    return new CouncilError('SCHEMA_VIOLATION', `required in ${what}`, fieldPath(prefix, e.instancePath, name));
  }
  return new CouncilError('SCHEMA_VIOLATION', `${what}: ${e.message ?? e.keyword}`, fieldPath(prefix, e.instancePath));
}

/** Validates against a schema; throws SCHEMA_VIOLATION naming the field. */
export function checkAgainstSchema(schema: object, value: unknown, what: string, prefix = ''): void {
  const v = compileSchema(schema);
  if (!v(value)) throw schemaError(what, prefix, v.errors ?? []);
}

/** A review answer as `{reviews}`: a bare array or a single review are read as one. */
export function normaliseAnswer(stage: TaskStage, content: unknown): unknown {
  if (stage !== 'review') return content;
  if (Array.isArray(content)) return { reviews: content };
  if (isRecord(content) && !('reviews' in content)) return { reviews: [content] };
  return content;
}

/** Validates a member's answer for a stage against its schema (what the SDK checks before sending). */
export function validateAnswerContent<S extends TaskStage>(stage: S, content: unknown): MemberAnswerContent[S] {
  const normalised = normaliseAnswer(stage, content);
  checkAgainstSchema(ANSWER_SCHEMAS[stage], normalised, `the ${stage} answer`);
  return normalised as MemberAnswerContent[S];
}

/** Validates a task a member received (what the SDK checks before calling the member's handler). */
export function validateTask(task: unknown): void {
  const stage = isRecord(task) ? task['stage'] : undefined;
  const schema = typeof stage === 'string' ? TASK_SCHEMAS[stage as TaskStage] : undefined;
  if (!schema) throw new CouncilError('SCHEMA_VIOLATION', 'not a task of a known stage', 'stage');
  checkAgainstSchema(schema, task, `the ${stage} task`);
}

export function validateAnswerMessage(value: unknown): MemberAnswerMessage {
  checkAgainstSchema(ANSWER_MESSAGE_SCHEMA, value, 'the answer message');
  return value as MemberAnswerMessage;
}
export function validateVerdict(value: unknown): MemberVerdict {
  checkAgainstSchema(VERDICT_SCHEMA, value, 'the verdict');
  return value as MemberVerdict;
}
export function validateCancelNotice(value: unknown): CancelNotice {
  checkAgainstSchema(CANCEL_NOTICE_SCHEMA, value, 'the cancel notice');
  return value as CancelNotice;
}
export function isCancelNotice(value: unknown): boolean {
  return isRecord(value) && value['notice'] === 'cancel';
}

/** Review ids the controller stamps: the task id and the review's place in the answer. */
export function stampedReviewId(taskId: string, index: number): string {
  return `${taskId}:${index + 1}`;
}

/**
 * The bookkeeping of a task's answer, as the controller knows it. Every id it stamps is derived
 * from the task id (unique per run, round, stage and member), so a replayed answer gets the same ids.
 */
export function stampedValues(run: RunData, task: TaskRecord): Record<string, unknown> {
  const scheme = CONFIDENCE_SCHEMES[0];
  switch (task.stage) {
    case 'proposal':
      return {
        candidate_id: task.task_id,
        author_member_id: task.member_id,
        version: 1,
        parent_candidate_id: null,
        confidence_scheme: scheme,
      };
    case 'revision': {
      const request = run.revision_requests
        .find((r) => r.round === task.round)
        ?.requests.find((r) => r.author_member_id === task.member_id);
      if (!request) throw new CouncilError('INVALID_STATE', 'no revision was requested from this member');
      const parent = run.candidates[request.target_candidate_id]?.candidate;
      return {
        candidate_id: task.task_id,
        author_member_id: task.member_id,
        version: (parent?.version ?? 1) + 1,
        parent_candidate_id: request.target_candidate_id,
        confidence_scheme: scheme,
      };
    }
    case 'review':
      return { reviewer_member_id: task.member_id };
    case 'conflict-map':
      return {};
    case 'frame-check':
      return { observer_member_id: task.member_id };
    case 'synthesis':
      return {
        decision_id: task.task_id,
        goal_contract_id: run.goal_contract.goal_contract_id,
        decision_owner: run.goal_contract.decision_owner,
        confidence_scheme: scheme,
      };
    default: {
      const _exhaustive: never = task.stage;
      return _exhaustive;
    }
  }
}

/** A field the member sent anyway must carry the stamped value (a parent may be named by its blind ref). */
function stamp(run: RunData, target: Record<string, unknown>, stamped: Record<string, unknown>, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(stamped)) {
    if (key in target && target[key] !== undefined) {
      const sent = target[key];
      const same =
        stableJson(sent) === stableJson(value) ||
        (key === 'parent_candidate_id' && typeof sent === 'string' && resolveArtifactRef(run, sent) === value);
      if (!same)
        throw new CouncilError(
          'STAMPED_FIELD_MISMATCH',
          `${key} is set by the controller (${JSON.stringify(value)}); send content only, or this value`,
          path === '' ? key : `${path}.${key}`,
        );
    }
    out[key] = value;
  }
  return out;
}

/**
 * A member's answer to a task, as the artifact the decider checks: validated against the stage's
 * schema (an unknown field is refused by name), then stamped with the bookkeeping the controller
 * knows. A member that sends a stamped field anyway is accepted only with the stamped value
 * (STAMPED_FIELD_MISMATCH names the field otherwise). Optional ids a member may choose
 * (`conflict_map_id`, `frame_check_id`) default to the task id.
 */
export function acceptMemberAnswer(state: CouncilRunState, taskId: string, memberId: string, content: unknown): unknown {
  if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', 'no such run');
  const task = state.tasks[taskId];
  if (!task) throw new CouncilError('TASK_NOT_FOUND', `no task ${taskId}`, 'task_id');
  if (task.member_id !== memberId) throw new CouncilError('NOT_TASK_ASSIGNEE', `task ${taskId} belongs to another member`, 'member_id');
  const answer = validateAnswerContent(task.stage, content) as unknown as Record<string, unknown>;
  const stamped = stampedValues(state, task);
  switch (task.stage) {
    case 'review':
      return {
        reviews: (answer['reviews'] as Record<string, unknown>[]).map((r, i) =>
          stamp(state, r, { review_id: stampedReviewId(task.task_id, i), ...stamped }, `reviews[${i}]`),
        ),
      };
    case 'conflict-map':
      return { conflict_map_id: task.task_id, ...answer };
    case 'frame-check':
      return stamp(state, { frame_check_id: task.task_id, ...answer }, stamped, '');
    default:
      return stamp(state, answer, stamped, '');
  }
}

/**
 * Tasks to cancel between two states of a run: a task that timed out (its stage went on without
 * it), and every task still open when the run ended. A member that receives the notice stops
 * working on the task. A diff of states, so it holds however the change was appended.
 */
export function cancelledTasks(before: CouncilRunState, after: CouncilRunState): { member_id: string; notice: CancelNotice }[] {
  if (before.status !== 'running' || after.status === 'empty') return [];
  const out: { member_id: string; notice: CancelNotice }[] = [];
  for (const id of before.task_order) {
    const was = before.tasks[id];
    const now = after.tasks[id];
    if (was.status !== 'issued' || !now) continue;
    const notice = (reason: CancelNotice['reason'], note?: string): CancelNotice => ({
      notice: 'cancel',
      run_id: before.run_id,
      task_id: id,
      reason,
      ...(note !== undefined ? { note } : {}),
    });
    if (now.status === 'cancelled' && after.status === 'terminated')
      out.push({ member_id: now.member_id, notice: notice('run-terminated', after.terminal.reason) });
    else if (now.status === 'failed' && after.failures.some((f) => f.task_id === id && f.reason === 'timeout'))
      out.push({ member_id: now.member_id, notice: notice('deadline-passed') });
  }
  return out;
}
