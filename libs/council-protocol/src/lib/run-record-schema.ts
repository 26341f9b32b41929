import { ErrorObject } from 'ajv/dist/2020';
import { COUNCIL_LEVELS, COUNCIL_PROTOCOL_ID, CouncilLevel, levelNumber, TERMINAL_STATES } from './contracts';
import { compileSchema } from './member-answers';

/**
 * The RunRecord (spec 8.7) as JSON Schema, one per implementation level: what each level of the
 * checklist (spec 22) requires a record to carry. Sections may hold more than listed (the record
 * grows with council:L4 and L5), so objects are open; what is listed is typed. The offline
 * validator (validateRunRecord) checks a record against its level's schema first, then the rules
 * a schema cannot state (lineage, blindness, grounding, budgets).
 */
const $schema = 'https://json-schema.org/draft/2020-12/schema';
const text = { type: 'string', pattern: '\\S' } as const;
const list = { type: 'array' } as const;
const object = { type: 'object' } as const;

/** Checklist 1, 3, 5, 7, 8, 15, 16 (council:L0): contract, disclosed participants, artifacts, tasks. */
const L0 = {
  required: ['level', 'participants', 'goal_contract_revisions', 'artifacts'],
  properties: {
    run_id: text,
    protocol: { const: COUNCIL_PROTOCOL_ID },
    protocol_version: text,
    level: { enum: [...COUNCIL_LEVELS] },
    participants: { type: 'array', items: { type: 'object', required: ['member_id', 'independence_group'] } },
    goal_contract_revisions: { type: 'array', items: { type: 'object', required: ['goal_contract'] } },
    artifacts: {
      type: 'object',
      required: ['candidates', 'reviews', 'conflict_maps'],
      properties: { candidates: list, reviews: list, conflict_maps: list, frame_checks: list },
    },
    tasks: { type: 'array', items: { type: 'object', required: ['task_id', 'member_id', 'stage', 'inputs'] } },
    terminal: {
      anyOf: [
        { type: 'null' },
        { type: 'object', required: ['terminal_state'], properties: { terminal_state: { enum: [...TERMINAL_STATES] } } },
      ],
    },
    decision_record: { anyOf: [{ type: 'null' }, object] },
  },
} as const;

/** Checklist 4 (council:L1): the anonymisation mapping, kept on the audit surface. */
const L1 = {
  properties: {
    anonymization: {
      type: 'object',
      required: ['mapping'],
      properties: {
        restricted: { type: 'boolean' },
        mapping: { type: 'array', items: { type: 'object', required: ['author_member_id'] } },
      },
    },
  },
} as const;

/** Checklist 6 and 11 (council:L2): revision requests, checkpoints. */
const L2 = {
  properties: {
    revision_requests: { type: 'array', items: { type: 'object', required: ['requests'], properties: { requests: list } } },
    checkpoints: list,
    best_checkpoint_id: { anyOf: [{ type: 'null' }, text] },
  },
} as const;

/** Checklist 9, 10, 14 (council:L3): the enforced policy and controller, budgets, timing, the controller's decisions, rounds, checkpoints, failures. */
const L3 = {
  required: ['budgets', 'timing', 'policy', 'controller_decisions', 'rounds', 'checkpoints', 'failures'],
  properties: {
    controller_id: text,
    policy: object,
    budgets: { type: 'object', required: ['budget', 'usage'], properties: { budget: object, usage: object } },
    timing: { type: 'object', required: ['started_at'] },
    controller_decisions: list,
    rounds: list,
    checkpoints: list,
    failures: { type: 'array', items: { type: 'object', required: ['member_id', 'reason'] } },
    refusals: list,
  },
} as const;

const LAYERS = [L0, L1, L2, L3] as const;

/** The RunRecord schema a record of `level` must meet (levels above L3 add nothing here yet). */
export function runRecordSchema(level: CouncilLevel) {
  const layers = LAYERS.slice(0, Math.min(levelNumber(level), 3) + 1);
  return {
    $schema,
    $id: `council.v1/run-record/${level}`,
    title: `RunRecord (spec 8.7) of a ${level} run`,
    type: 'object',
    required: layers.flatMap((l) => ('required' in l ? [...l.required] : [])),
    properties: Object.assign({}, ...layers.map((l) => l.properties)) as Record<string, unknown>,
  };
}

export const RUN_RECORD_SCHEMAS = Object.fromEntries(COUNCIL_LEVELS.map((l) => [l, runRecordSchema(l)])) as Record<
  CouncilLevel,
  ReturnType<typeof runRecordSchema>
>;

export interface RunRecordSchemaProblem {
  code: 'MISSING_SECTION' | 'SCHEMA_VIOLATION';
  path: string;
  message: string;
}

function pathOf(e: ErrorObject): string {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  return parts.reduce((path, p) => (/^\d+$/.test(p) ? `${path}[${p}]` : path === '' ? p : `${path}.${p}`), '') || '(root)';
}

/** A record checked against its level's schema: a missing section is MISSING_SECTION, anything else SCHEMA_VIOLATION. */
export function runRecordSchemaProblems(record: unknown, level: CouncilLevel): RunRecordSchemaProblem[] {
  const validate = compileSchema(RUN_RECORD_SCHEMAS[level]);
  if (validate(record)) return [];
  const errors = (validate.errors ?? []).filter((e) => !['anyOf', 'if'].includes(e.keyword));
  return errors.map((e) =>
    e.keyword === 'required' && e.instancePath === ''
      ? { code: 'MISSING_SECTION', path: pathOf(e), message: `a ${level} record carries its ${pathOf(e)}` }
      : {
          code: e.keyword === 'required' ? 'MISSING_SECTION' : 'SCHEMA_VIOLATION',
          path: pathOf(e),
          message: `${level} RunRecord schema: ${e.message ?? e.keyword}`,
        },
  );
}
