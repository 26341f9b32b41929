import fc from 'fast-check';
import { AcpError } from '@conclave/acp-protocol';
import { readRequestBody } from './request-body';

const bytes = (text: string) => new TextEncoder().encode(text);
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof AcpError ? { code: err.code } : { thrown: String(err) };
  }
  return { code: 'none' };
};

describe('readRequestBody: a request body as every NATS edge reads it', () => {
  it('given a body over the limit, then PAYLOAD_TOO_LARGE before it is parsed, even when it is not JSON', () => {
    expect(codeOf(() => readRequestBody(bytes(`{"a":"${'x'.repeat(100)}"}`), 64))).toEqual({ code: 'PAYLOAD_TOO_LARGE' });
    expect(codeOf(() => readRequestBody(bytes('not json at all, and long enough'), 8))).toEqual({ code: 'PAYLOAD_TOO_LARGE' });
    expect(readRequestBody(bytes('{"a":1}'), 7)).toEqual({ a: 1 });
  });

  it('given bytes that are not UTF-8 or not JSON, then INVALID_JSON: never a U+FFFD in what is stored', () => {
    expect(codeOf(() => readRequestBody(Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), 1024))).toEqual({
      code: 'INVALID_JSON',
    });
    expect(codeOf(() => readRequestBody(bytes('{"a":'), 1024))).toEqual({ code: 'INVALID_JSON' });
  });

  it('given JSON that is not an object, then SCHEMA_VIOLATION', () => {
    for (const text of ['[]', 'null', '1', '"x"', 'true'])
      expect(codeOf(() => readRequestBody(bytes(text), 1024))).toEqual({ code: 'SCHEMA_VIOLATION' });
  });

  it('property: any bytes are read as an object or refused with one of the three codes, nothing else', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.json().map(bytes)), fc.integer({ min: 0, max: 80 }), (data, limit) => {
        let body: unknown;
        try {
          body = readRequestBody(data, limit);
        } catch (err) {
          expect(err).toBeInstanceOf(AcpError);
          expect(['PAYLOAD_TOO_LARGE', 'INVALID_JSON', 'SCHEMA_VIOLATION']).toContain((err as AcpError).code);
          if (data.length > limit) expect((err as AcpError).code).toBe('PAYLOAD_TOO_LARGE');
          return;
        }
        expect(data.length).toBeLessThanOrEqual(limit);
        expect(typeof body === 'object' && body !== null && !Array.isArray(body)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
