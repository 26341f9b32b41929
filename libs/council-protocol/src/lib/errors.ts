/**
 * Stable error codes of the Council library. Every refusal (an invalid artifact, a command
 * that the run's state or a controller rule forbids) is a CouncilError carrying exactly one
 * of these; the service maps it to `{ok: false, error: {code, message, field?}}`.
 * SCHEMA_VIOLATION is shared with the ACP API (DESIGN.md section 5) on purpose.
 */
export const COUNCIL_ERROR_CODES = [
  'SCHEMA_VIOLATION',
  'UNSUPPORTED_SCHEMA_VERSION',
  'INVALID_STATE',
  'RUN_NOT_FOUND',
  'RUN_ALREADY_STARTED',
  'TASK_NOT_FOUND',
  'TASK_ALREADY_SETTLED',
  'TASK_NOT_DUE',
  'NOT_TASK_ASSIGNEE',
  'NOT_AUTHORIZED_ROLE',
  'SELF_REVIEW',
  'DUPLICATE_ARTIFACT',
  'UNKNOWN_REFERENCE',
  'UNREFERENCED_CLAIM',
  'LINEAGE_MISMATCH',
  /** A member sent a field the controller stamps (an id, the version) with another value. */
  'STAMPED_FIELD_MISMATCH',
  'UNANSWERED_ISSUE',
  'DISSENT_DROPPED',
  /** The chair selected a candidate version that failed its executable tests (test-first elimination). */
  'ELIMINATED_BY_TESTS',
  'BELOW_QUORUM',
  /** The bridge: ACP refused an entry the council service posted (the ACP code is in the message). */
  'ACP_REFUSED',
  /** The bridge: authentication is required and the council service has no key of its own to sign with. */
  'BRIDGE_NOT_CONFIGURED',
  'INTERNAL',
] as const;

export type CouncilErrorCode = (typeof COUNCIL_ERROR_CODES)[number];

/** The wire shape of a refusal, the same as the ACP API's error body. */
export interface CouncilErrorBody {
  code: CouncilErrorCode;
  message: string;
  field?: string;
}

/**
 * A rule broken by the caller (member, human, service). Never an infrastructure failure.
 * `field` is the path of the offending field, e.g. `budget.max_rounds` or
 * `material_issues[1].severity`, so a member can repair its artifact without guessing.
 */
export class CouncilError extends Error {
  override readonly name = 'CouncilError';

  constructor(
    readonly code: CouncilErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(field === undefined ? message : `${field}: ${message}`);
  }

  toJSON(): CouncilErrorBody {
    return this.field === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, field: this.field };
  }
}

export function isCouncilError(value: unknown): value is CouncilError {
  return value instanceof CouncilError;
}
