import { Controller, INestMicroservice, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { AcpError } from '@conclave/acp-protocol';
import { connect, NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { PlainJsonNatsServer, PlainNatsContext } from './plain-json-nats.server';
import { PassThroughRpcExceptionFilter } from './rpc-exception.filter';
import { requestJson } from './jetstream';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
class EchoController {
  @MessagePattern('v1.echo')
  echo(@Payload() body: unknown, @Ctx() ctx: PlainNatsContext) {
    return { ok: true, body, subject: ctx.getSubject(), bytes: ctx.getRawBody().length };
  }

  @MessagePattern('v1.reject')
  reject(): never {
    throw new AcpError('PROPOSAL_NOT_FOUND', 'no such proposal', 'proposal_id');
  }

  @MessagePattern('v1.crash')
  crash(): never {
    throw new TypeError('boom');
  }

  /** A reply bigger than the server's max_payload, as a list over large payloads would build. */
  @MessagePattern('v1.huge')
  huge(@Ctx() ctx: PlainNatsContext) {
    return { ok: true, blob: 'x'.repeat(ctx.getMaxReplyBytes() + 1) };
  }

  /** A reply JSON cannot encode. */
  @MessagePattern('v1.unencodable')
  unencodable() {
    return { ok: true, n: BigInt(1) };
  }
}

describe('PlainJsonNatsServer (DESIGN section 5: plain JSON bodies, no framework envelope)', () => {
  const prefix = `t${ulid().toLowerCase()}`;
  let nc: NatsConnection;
  let app: INestMicroservice;

  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
    const moduleRef = await Test.createTestingModule({ controllers: [EchoController] }).compile();
    app = moduleRef.createNestMicroservice({
      strategy: new PlainJsonNatsServer({ connection: nc, subjectPrefix: prefix, queue: 'q', maxPayloadBytes: 1024 }),
    });
    app.useLogger(false);
    await app.listen();
  });

  afterAll(async () => {
    await app.close();
    await nc.drain();
  });

  it('given a plain JSON request, when served, then the reply is the handler result as plain JSON', async () => {
    const reply = await requestJson(nc, `${prefix}.v1.echo`, { hello: 'world' });
    expect(reply).toEqual({ ok: true, body: { hello: 'world' }, subject: `${prefix}.v1.echo`, bytes: 17 });
  });

  it('given a request whose reply subject is not an inbox (aimed at a stream or a KV bucket), when served, then it is handled but nothing is published there', async () => {
    const target = `${prefix}.evt.proposal.injected`;
    const captured = nc.subscribe(target, { max: 1 });
    let got = 0;
    void (async () => {
      for await (const _ of captured) got++;
    })();
    nc.publish(`${prefix}.v1.echo`, new TextEncoder().encode('{"x":1}'), { reply: target });
    // An inbox request sent after it is answered, so the first one has been served by then.
    expect(await requestJson(nc, `${prefix}.v1.echo`, { y: 2 })).toMatchObject({ ok: true });
    await nc.flush();
    expect(got).toBe(0);
    captured.unsubscribe();
  });

  it('given a body that is not JSON, then INVALID_JSON', async () => {
    const msg = await nc.request(`${prefix}.v1.echo`, new TextEncoder().encode('{nope'), { timeout: 5000 });
    expect(JSON.parse(new TextDecoder().decode(msg.data))).toMatchObject({ ok: false, error: { code: 'INVALID_JSON' } });
  });

  it('given JSON whose bytes are not UTF-8, then INVALID_JSON and the handler never sees it (the fuzzer found it accepted)', async () => {
    // Given a string value holding a stray 0xFF, an overlong '/' and a lone surrogate.
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) {
      const body = Uint8Array.from([...Buffer.from('{"name":"a'), ...bad, ...Buffer.from('"}')]);
      // When it is sent, then it is refused as not JSON.
      const msg = await nc.request(`${prefix}.v1.echo`, body, { timeout: 5000 });
      expect(JSON.parse(new TextDecoder().decode(msg.data))).toMatchObject({ ok: false, error: { code: 'INVALID_JSON' } });
    }
  });

  it('given JSON that is not an object (true, [], 0, null, a string), then SCHEMA_VIOLATION and the handler never runs (the fuzzer found them answered)', async () => {
    for (const body of ['true', '[]', '[[[1]]]', '0', 'null', '"x"']) {
      // When a handler that reads no field (echo) is sent a body that is not an object, then it is refused.
      const msg = await nc.request(`${prefix}.v1.echo`, new TextEncoder().encode(body), { timeout: 5000 });
      expect(JSON.parse(new TextDecoder().decode(msg.data))).toMatchObject({ ok: false, error: { code: 'SCHEMA_VIOLATION' } });
    }
  });

  it('given a body over the size limit, then PAYLOAD_TOO_LARGE and the handler never runs', async () => {
    const reply = await requestJson(nc, `${prefix}.v1.crash`, { blob: 'x'.repeat(2000) });
    expect(reply).toMatchObject({ ok: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('given a handler that throws a typed AcpError, then its code and field reach the caller', async () => {
    const reply = await requestJson(nc, `${prefix}.v1.reject`, {});
    expect(reply).toEqual({
      ok: false,
      error: { code: 'PROPOSAL_NOT_FOUND', message: 'no such proposal', field: 'proposal_id' },
    });
  });

  it('given a reply bigger than max_payload, then PAYLOAD_TOO_LARGE instead of a dead process, and the server keeps serving', async () => {
    const reply = await requestJson(nc, `${prefix}.v1.huge`, {});
    expect(reply).toMatchObject({ ok: false, error: { code: 'PAYLOAD_TOO_LARGE', message: expect.stringMatching(/smaller page/) } });
    expect(await requestJson(nc, `${prefix}.v1.echo`, { still: 'here' })).toMatchObject({ ok: true, body: { still: 'here' } });
  });

  it('given a reply that cannot be encoded, then INTERNAL, and the server keeps serving', async () => {
    expect(await requestJson(nc, `${prefix}.v1.unencodable`, {})).toMatchObject({ ok: false, error: { code: 'INTERNAL' } });
    expect(await requestJson(nc, `${prefix}.v1.echo`, { still: 'here' })).toMatchObject({ ok: true });
  });

  it('given a handler that fails unexpectedly, then INTERNAL without internals', async () => {
    const reply = await requestJson<{ ok: boolean; error: { code: string; message: string } }>(nc, `${prefix}.v1.crash`, {});
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('INTERNAL');
    expect(reply.error.message).not.toContain('boom');
  });
});
