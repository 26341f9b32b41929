import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { AcpError, AcpErrorCode } from '@conclave/acp-protocol';
import { errorReply } from '@conclave/messaging';

/** HTTP status of each stable error code; the body is the NATS API's `{ok: false, error}`. */
export const HTTP_STATUS: Record<AcpErrorCode, number> = {
  INVALID_JSON: 400,
  SCHEMA_VIOLATION: 400,
  UNSUPPORTED_SCHEMA_VERSION: 400,
  INVALID_ID: 400,
  DUPLICATE_PROPOSAL_ID: 409,
  PROPOSAL_NOT_FOUND: 404,
  PROPOSAL_NOT_PENDING: 409,
  DUPLICATE_RESPONSE: 409,
  SELF_RESPONSE: 409,
  NOT_ESCALATED: 409,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  CONFLICT: 409,
  INTERNAL: 500,
};

/** Maps an AcpError (or Express's body-parser errors) to the status and the `{ok: false, error}` body. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const error = toAcpError(exception);
    if (error.code === 'INTERNAL') this.logger.error('request failed', (exception as Error)?.stack);
    if (error.retryAfterMs !== undefined) res.setHeader('Retry-After', String(Math.ceil(error.retryAfterMs / 1000)));
    res.status(HTTP_STATUS[error.code]).json(errorReply(error));
  }
}

function toAcpError(exception: unknown): AcpError {
  if (exception instanceof AcpError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 413) return new AcpError('PAYLOAD_TOO_LARGE', 'request body is too large');
    if (status === 400) return new AcpError('INVALID_JSON', `request body is not JSON: ${exception.message}`);
    if (status === 404) return new AcpError('PROPOSAL_NOT_FOUND', exception.message);
  }
  return new AcpError('INTERNAL', 'internal error; nothing was changed');
}
