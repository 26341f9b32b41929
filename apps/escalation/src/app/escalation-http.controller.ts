import { Body, Controller, Get, Headers, HttpCode, Ip, Param, Post, Query, UseFilters } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { okReply } from '@conclave/messaging';
import { EscalationReaders, httpRequest } from './escalation-readers';
import { HttpErrorFilter } from './http-error.filter';
import { OPENAPI_DOCUMENT } from './openapi';
import { ResolveEscalationHandler } from './resolve-escalation.handler';

/**
 * The HTTP API for people and tools: list and read escalations, resolve one, each with
 * `Authorization: Bearer <token>` of a registered participant (auth required), read through the
 * same grants and withholding as the NATS API. Same bodies and error codes; OpenAPI at GET /openapi.json.
 */
@Controller()
@UseFilters(HttpErrorFilter)
export class EscalationHttpController {
  constructor(
    private readonly readers: EscalationReaders,
    private readonly resolve: ResolveEscalationHandler,
  ) {}

  @Get('openapi.json')
  openapi() {
    return OPENAPI_DOCUMENT;
  }

  @Get('escalations')
  async list(@Query() query: Record<string, unknown>, @Ip() ip: string, @Headers('authorization') authorization?: string) {
    return okReply(
      await this.readers.list({ authorization, source: `http:${ip}` }, query, undefined, httpRequest('GET', '/escalations', query)),
    );
  }

  @Get('escalations/:proposal_id')
  async get(@Param('proposal_id') proposalId: string, @Ip() ip: string, @Headers('authorization') authorization?: string) {
    return okReply(
      await this.readers.get(
        { authorization, source: `http:${ip}` },
        proposalId,
        httpRequest('GET', `/escalations/${proposalId}`, undefined),
      ),
    );
  }

  /** A human resolution from a person or a tool: the note is required here (who and why, 10.2). */
  @Post('escalations/:proposal_id/resolve')
  @HttpCode(200)
  async post(
    @Param('proposal_id') proposalId: string,
    @Body() body: unknown,
    @Ip() ip: string,
    @Headers('authorization') authorization?: string,
  ) {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new AcpError('SCHEMA_VIOLATION', 'the body must be a JSON object');
    const note = (body as Record<string, unknown>)['note'];
    if (typeof note !== 'string' || note.trim().length === 0) throw new AcpError('SCHEMA_VIOLATION', 'a note is required: say why', 'note');
    const command = { ...body, proposal_id: proposalId };
    return okReply(
      await this.resolve.handle(command, {
        authorization,
        source: `http:${ip}`,
        request: httpRequest('POST', `/escalations/${proposalId}/resolve`, command),
      }),
    );
  }
}
