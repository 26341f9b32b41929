import { AcpErrorBody, AcpErrorCode } from '@conclave/acp-protocol';

/** A failure reply of the NATS API, typed by its stable code (DESIGN.md section 5). */
export class ConclaveError extends Error {
  override readonly name = 'ConclaveError';
  readonly code: AcpErrorCode;
  readonly field?: string;
  /** RATE_LIMITED: wait this long before retrying. */
  readonly retryAfterMs?: number;

  constructor(body: AcpErrorBody, options?: { cause?: unknown }) {
    super(`${body.code}: ${body.message}`, options);
    this.code = body.code;
    this.field = body.field;
    if (typeof body.retry_after_ms === 'number') this.retryAfterMs = body.retry_after_ms;
  }
}

/** The service could not be reached or did not answer in time. */
export class ConclaveUnavailableError extends Error {
  override readonly name = 'ConclaveUnavailableError';
  constructor(subject: string, options: { cause: unknown }) {
    super(`no reply on ${subject}: ${(options.cause as Error)?.message ?? options.cause}`, options);
  }
}
