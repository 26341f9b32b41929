import { Body, Controller, Get, INestApplication, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { applyHttpEdge } from './http-edge';

@Controller()
class ProbeController {
  @Get('items/:id')
  item(@Param('id') id: string) {
    if (id !== 'known') throw new AcpError('SCHEMA_VIOLATION', 'id must be known', 'id');
    return { ok: true, id };
  }

  @Post('items')
  create(@Body() body: unknown) {
    return { ok: true, body };
  }

  @Get('boom')
  boom(): never {
    throw new TypeError('secret internals');
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

/**
 * HTTP requests that fail before or outside a controller's own filter get the typed body of the
 * NATS API (the fuzzer found Nest's untyped 400s for a non-JSON body or a bad path parameter, and
 * a 500 for a typed error thrown where no filter was set).
 */
describe('TypedHttpErrorFilter: every HTTP error is {ok: false, error: {code, message}}', () => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    app = await NestFactory.create(ProbeModule, { logger: false });
    applyHttpEdge(app);
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(() => app.close());

  const send = async (path: string, init?: RequestInit) => {
    const res = await fetch(base + path, init);
    return { status: res.status, body: await res.json() };
  };
  const json = (body: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it('given a handler throwing an AcpError with no filter of its own, then its code and 400, not a 500', async () => {
    expect(await send('/items/other')).toEqual({
      status: 400,
      body: { ok: false, error: { code: 'SCHEMA_VIOLATION', message: 'id must be known', field: 'id' } },
    });
  });

  it('given a body that is not JSON, or JSON the parser refuses (a bare number), then INVALID_JSON', async () => {
    for (const body of ['{nope', '2147483629', '-5e-236']) {
      const r = await send('/items', json(body));
      expect(r).toMatchObject({ status: 400, body: { ok: false, error: { code: 'INVALID_JSON' } } });
    }
  });

  it('given a JSON body whose bytes are not UTF-8, then INVALID_JSON and the handler never sees it (the fuzzer found a resolution note stored with U+FFFD)', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"note":"a'), 0xc3, 0x28, ...new TextEncoder().encode('"}')]);
    const r = await send('/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
    expect(r).toMatchObject({ status: 400, body: { ok: false, error: { code: 'INVALID_JSON' } } });
    expect(await send('/items', json('{"note":"é"}'))).toEqual({ status: 201, body: { ok: true, body: { note: 'é' } } });
  });

  it('given a path parameter that is not percent-encoded UTF-8, then a typed 400', async () => {
    for (const id of ['%', '01ARZ%FF', '%C0%AF']) {
      const r = await send(`/items/${id}`);
      expect(r).toMatchObject({ status: 400, body: { ok: false, error: { code: 'SCHEMA_VIOLATION' } } });
    }
  });

  it('given an unexpected failure, then INTERNAL without its internals', async () => {
    const r = await send('/boom');
    expect(r).toMatchObject({ status: 500, body: { ok: false, error: { code: 'INTERNAL' } } });
    expect(JSON.stringify(r.body)).not.toContain('secret');
  });

  it('given a route that does not exist, then a typed 404', async () => {
    expect(await send('/nowhere')).toMatchObject({ status: 404, body: { ok: false, error: { code: 'PROPOSAL_NOT_FOUND' } } });
  });

  it("given headers over Node's limit, then a typed PAYLOAD_TOO_LARGE instead of a bare 431 (the fuzzer found it)", async () => {
    const r = await send('/items/known', { headers: { 'x-big': 'h'.repeat(20_000) } });
    expect(r).toEqual({ status: 431, body: { ok: false, error: { code: 'PAYLOAD_TOO_LARGE', message: 'request headers are too large' } } });
  });
});
