import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, UseFilters } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { okReply } from '@conclave/messaging';
import { EscalationQueries } from './escalation-queries';
import { HttpErrorFilter } from './http-error.filter';
import { OPENAPI_DOCUMENT } from './openapi';
import { ResolveEscalationHandler } from './resolve-escalation.handler';

/**
 * The HTTP API for people and tools (issue 5 item 5): list and read escalations, resolve one.
 * Same bodies and error codes as the NATS API; the OpenAPI document is at GET /openapi.json.
 */
@Controller()
@UseFilters(HttpErrorFilter)
export class EscalationHttpController {
  constructor(
    private readonly queries: EscalationQueries,
    private readonly resolve: ResolveEscalationHandler,
  ) {}

  @Get('openapi.json')
  openapi() {
    return OPENAPI_DOCUMENT;
  }

  @Get('escalations')
  list(@Query() query: Record<string, unknown>) {
    return okReply(this.queries.list(query));
  }

  @Get('escalations/:proposal_id')
  async get(@Param('proposal_id') proposalId: string) {
    return okReply(await this.queries.get(proposalId));
  }

  /** A human resolution from a person or a tool: the note is required here (who and why, 10.2). */
  @Post('escalations/:proposal_id/resolve')
  @HttpCode(200)
  async post(@Param('proposal_id') proposalId: string, @Body() body: unknown, @Headers('authorization') authorization?: string) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AcpError('SCHEMA_VIOLATION', 'the body must be a JSON object');
    const note = (body as Record<string, unknown>)['note'];
    if (typeof note !== 'string' || note.trim().length === 0) throw new AcpError('SCHEMA_VIOLATION', 'a note is required: say why', 'note');
    return okReply(await this.resolve.handle({ ...body, proposal_id: proposalId }, authorization));
  }
}
