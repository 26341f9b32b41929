/**
 * Stable error codes of the NATS API (DESIGN.md section 5). Every rejection of a command,
 * at any layer, carries exactly one of these. The edge maps them to
 * `{ok: false, error: {code, message, field?}}`; clients switch on `code`, never on `message`.
 */
export const ACP_ERROR_CODES = [
  'INVALID_JSON',
  'SCHEMA_VIOLATION',
  'UNSUPPORTED_SCHEMA_VERSION',
  'INVALID_ID',
  'DUPLICATE_PROPOSAL_ID',
  'PROPOSAL_NOT_FOUND',
  'PROPOSAL_NOT_PENDING',
  'DUPLICATE_RESPONSE',
  'SELF_RESPONSE',
  'NOT_ESCALATED',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMITED',
  'CONFLICT',
  'INTERNAL',
] as const;

export type AcpErrorCode = (typeof ACP_ERROR_CODES)[number];

/** The wire shape of a failure, exactly as DESIGN.md section 5 names it. */
export interface AcpErrorBody {
  code: AcpErrorCode;
  message: string;
  field?: string;
  /** RATE_LIMITED: how long to wait before the next attempt can succeed. */
  retry_after_ms?: number;
}

/**
 * A rule broken by the caller. Thrown by validators and deciders; never an infrastructure
 * failure (those are rethrown with `cause` and map to INTERNAL at the edge).
 */
export class AcpError extends Error {
  override readonly name = 'AcpError';

  constructor(
    readonly code: AcpErrorCode,
    message: string,
    readonly field?: string,
    /** A retry hint (RATE_LIMITED). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  toJSON(): AcpErrorBody {
    return {
      code: this.code,
      message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
      ...(this.retryAfterMs === undefined ? {} : { retry_after_ms: this.retryAfterMs }),
    };
  }
}

export function isAcpErrorCode(value: unknown): value is AcpErrorCode {
  return typeof value === 'string' && (ACP_ERROR_CODES as readonly string[]).includes(value);
}
