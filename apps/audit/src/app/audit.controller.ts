import { Controller, Get, Header, Query, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { AcpError } from '@conclave/acp-protocol';
import { okReply, PassThroughRpcExceptionFilter, PlainNatsContext, REPLY_ENVELOPE_BYTES, takeWithinBytes } from '@conclave/messaging';
import { AUDIT_PATTERNS } from '@conclave/registry-protocol';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { AuditLog, AuditQuery } from './audit-log';

/**
 * `<prefix>.v1.audit.query` and `<prefix>.v1.audit.head` over NATS, for administrators (signed
 * like every command when auth is required); a refused query is itself recorded on the chain. A
 * page stops at `limit` and at what one reply can carry: follow `next_after_seq`.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class AuditNatsController {
  constructor(
    private readonly audit: AuditLog,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(AUDIT_PATTERNS.query)
  onQuery(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.asAdministrator('audit.query', body, request, () => {
      const page = this.audit.query(parseQuery(body));
      const fitted = takeWithinBytes(page.entries, request.getMaxReplyBytes(), REPLY_ENVELOPE_BYTES);
      if (!fitted.truncated) return page;
      return { ...page, entries: fitted.items, next_after_seq: fitted.items[fitted.items.length - 1].seq };
    });
  }

  @MessagePattern(AUDIT_PATTERNS.head)
  onHead(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.asAdministrator('audit.head', body, request, () => ({ head: this.audit.head }));
  }

  private async asAdministrator<T extends object>(command: string, body: unknown, request: PlainNatsContext, read: () => T) {
    let identity: Identity | undefined;
    try {
      identity = await this.context.authenticate(request);
      this.context.requireRole(identity, 'administrator');
      return okReply(read());
    } catch (err) {
      if (err instanceof AcpError) await this.rejections.record(command, request, body, err, identity);
      throw err;
    }
  }
}

/**
 * HTTP on the service's internal port (with health and metrics): `GET /audit/entries`,
 * `GET /audit/head`, `GET /audit/export` (JSON Lines). Not authenticated: keep the port
 * internal (docs/security.md); entries hold actors and hashes, never payloads.
 */
@Controller('audit')
export class AuditHttpController {
  constructor(private readonly audit: AuditLog) {}

  @Get('entries')
  entries(@Query() query: Record<string, string>) {
    return this.audit.query(parseQuery(query));
  }

  @Get('head')
  head() {
    return this.audit.head;
  }

  @Get('export')
  @Header('Content-Type', 'application/x-ndjson')
  export(): string {
    return this.audit.exportJsonl();
  }
}

/** An audit query from a NATS body or an HTTP query string (exported for its test). */
export function parseQuery(input: unknown): AuditQuery {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new AcpError('SCHEMA_VIOLATION', 'query must be a JSON object');
  const b = input as Record<string, unknown>;
  const q: AuditQuery = {};
  for (const f of ['proposal_id', 'actor', 'action'] as const) {
    if (b[f] !== undefined) {
      if (typeof b[f] !== 'string') throw new AcpError('SCHEMA_VIOLATION', `${f} must be a string`, f);
      q[f] = b[f] as string;
    }
  }
  if (b['outcome'] !== undefined) {
    if (b['outcome'] !== 'recorded' && b['outcome'] !== 'rejected')
      throw new AcpError('SCHEMA_VIOLATION', 'outcome must be recorded or rejected', 'outcome');
    q.outcome = b['outcome'];
  }
  for (const f of ['after_seq', 'limit'] as const) {
    if (b[f] !== undefined) {
      // Only a number or a numeric string: Number() of an object calls its toString, which may throw.
      const v = b[f];
      const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
      if (!Number.isSafeInteger(n) || n < 0) throw new AcpError('SCHEMA_VIOLATION', `${f} must be a non-negative integer`, f);
      q[f] = n;
    }
  }
  return q;
}
