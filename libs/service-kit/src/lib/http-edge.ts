import { ArgumentsHost, Catch, ExceptionFilter, HttpException, INestApplication, Logger } from '@nestjs/common';
import type { NestExpressApplication, NestExpressBodyParserOptions } from '@nestjs/platform-express';
import type { Response } from 'express';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { throwError } from 'rxjs';
import { AcpError } from '@conclave/acp-protocol';

/** HTTP status of a stable error code (the same table as the escalation API's). */
export function httpStatusOf(code: string): number {
  switch (code) {
    case 'UNAUTHENTICATED':
      return 401;
    case 'FORBIDDEN':
      return 403;
    case 'PROPOSAL_NOT_FOUND':
      return 404;
    case 'DUPLICATE_PROPOSAL_ID':
    case 'PROPOSAL_NOT_PENDING':
    case 'DUPLICATE_RESPONSE':
    case 'SELF_RESPONSE':
    case 'NOT_ESCALATED':
    case 'CONFLICT':
      return 409;
    case 'PAYLOAD_TOO_LARGE':
      return 413;
    case 'RATE_LIMITED':
      return 429;
    case 'INTERNAL':
      return 500;
    default:
      return 400;
  }
}

/** The typed error for what Express, its body parser or Nest's router threw before (or instead of) a handler. */
function toAcpError(exception: unknown): AcpError {
  if (exception instanceof AcpError) return exception;
  const status =
    exception instanceof HttpException ? exception.getStatus() : ((exception as { status?: unknown } | null)?.status as number | undefined);
  const message = exception instanceof Error ? exception.message : '';
  if (status === 413) return new AcpError('PAYLOAD_TOO_LARGE', 'request body is too large');
  // Nest re-throws the body parser's SyntaxError as a BadRequestException carrying only its message.
  if (status === 400 && /JSON/.test(message)) return new AcpError('INVALID_JSON', 'request body is not JSON');
  if (status === 401) return new AcpError('UNAUTHENTICATED', 'authentication required');
  if (status === 403) return new AcpError('FORBIDDEN', 'not allowed');
  if (status === 404) return new AcpError('PROPOSAL_NOT_FOUND', 'no such resource');
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new AcpError('SCHEMA_VIOLATION', `the request cannot be read: ${message}`);
  return new AcpError('INTERNAL', 'internal error; nothing was changed');
}

/**
 * Every service's HTTP errors as `{ok: false, error: {code, message}}` with a stable code, the
 * NATS API's shape: errors a controller does not catch itself (an AcpError from a handler, a body
 * that is not JSON, a path parameter that is not percent-encoded UTF-8, an unknown route) would
 * otherwise be Nest's untyped `{statusCode, message}` or a 500. Other contexts (NATS) pass through.
 */
@Catch()
export class TypedHttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost) {
    if (host.getType() !== 'http') return throwError(() => exception);
    const res = host.switchToHttp().getResponse<Response>();
    // Not ready is an answer, not a failure: /readyz keeps its 503 and the checks that failed.
    if (exception instanceof HttpException && exception.getStatus() === 503 && !res.headersSent) {
      res.status(503).json(exception.getResponse());
      return undefined;
    }
    const error = toAcpError(exception);
    if (error.code === 'INTERNAL') this.logger.error('request failed', (exception as Error)?.stack);
    if (res.headersSent) return res.end();
    res.status(httpStatusOf(error.code)).json({ ok: false, error: error.toJSON() });
    return undefined;
  }
}

/**
 * Requests Node's HTTP parser refuses before any framework sees them (headers over its 16 KiB
 * limit, a malformed request line) get the typed body too, instead of Node's bare 431 or 400.
 */
export function answerClientErrorsTyped(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const error = tooLarge
      ? { code: 'PAYLOAD_TOO_LARGE', message: 'request headers are too large' }
      : { code: 'SCHEMA_VIOLATION', message: 'malformed HTTP request' };
    const body = JSON.stringify({ ok: false, error });
    const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** body-parser's verify hook: the raw body must be UTF-8 (a 400 naming JSON reads as INVALID_JSON). */
function refuseMalformedUtf8(_req: unknown, _res: unknown, buf: Buffer): void {
  try {
    strictUtf8.decode(buf);
  } catch {
    throw Object.assign(new Error('request body is not UTF-8 JSON'), { status: 400, statusCode: 400, expose: true });
  }
}

/**
 * The HTTP edge of every service: typed errors, and JSON bodies read as strict UTF-8 as on NATS
 * (bytes that are not UTF-8 are INVALID_JSON, never stored as U+FFFD; this parser is registered
 * before Nest's own, which then leaves the body be).
 */
export function applyHttpEdge(app: INestApplication): void {
  app.useGlobalFilters(new TypedHttpErrorFilter());
  (app as NestExpressApplication).useBodyParser('json', { verify: refuseMalformedUtf8 } as NestExpressBodyParserOptions);
  answerClientErrorsTyped(app.getHttpServer());
}
