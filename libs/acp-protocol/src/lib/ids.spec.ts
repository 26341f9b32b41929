/** Spec 12.1 ULIDs and DESIGN 3 derived event ids. */
import fc from 'fast-check';
import { AcpError } from './errors';
import { assertUlid, deriveEventId, isUlid } from './ids';

const CMD = '01HXYZ0000000000000000000A';

describe('12.1 ULID ids', () => {
  it('12.1 accepts 26 upper-case Crockford base32 characters, first at most 7', () => {
    expect(isUlid('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(true);
    expect(isUlid('7ZZZZZZZZZZZZZZZZZZZZZZZZZ')).toBe(true);
    for (const bad of [
      '8ZZZZZZZZZZZZZZZZZZZZZZZZZ',
      '01arz3ndektsv4rrffq69g5fav',
      '01ARZ3NDEKTSV4RRFFQ69G5FA',
      '01ARZ3NDEKTSV4RRFFQ69G5FAVX',
      '01ARZ3NDEKTSV4RRFFQ69G5FAI',
      '01ARZ3NDEKTSV4RRFFQ69G5FAU',
      '',
      null,
      42,
    ]) {
      expect(isUlid(bad)).toBe(false);
    }
    expect(() => assertUlid('nope', 'author_id')).toThrow(expect.objectContaining({ code: 'INVALID_ID', field: 'author_id' }));
  });
});

describe('deriveEventId (DESIGN 3: event ids derive from the command id)', () => {
  it('k = 0 is the command id; k adds to the 80-bit random part, keeping the 48-bit time', () => {
    expect(deriveEventId(CMD, 0)).toBe(CMD);
    expect(deriveEventId(CMD, 1)).toBe('01HXYZ0000000000000000000B');
    expect(deriveEventId(CMD, 22)).toBe('01HXYZ00000000000000000010');
    expect(deriveEventId('01HXYZ000000000000000000ZZ', 1)).toBe('01HXYZ00000000000000000100');
  });

  it('wraps the random part modulo 2^80 (never throws on a random value near the top)', () => {
    expect(deriveEventId('01HXYZ0000ZZZZZZZZZZZZZZZZ', 1)).toBe('01HXYZ00000000000000000000');
  });

  it('refuses a bad command id (INVALID_ID) and a bad index', () => {
    expect(() => deriveEventId('x', 1)).toThrow(AcpError);
    expect(() => deriveEventId(CMD, -1)).toThrow(expect.objectContaining({ code: 'SCHEMA_VIOLATION' }));
    expect(() => deriveEventId(CMD, 1.5)).toThrow(AcpError);
  });

  it('property: derived ids are valid ULIDs, distinct for distinct k, same time prefix, and sort in k order without wrap', () => {
    const crock = fc.constantFrom(...'0123456789ABCDEFGHJKMNPQRSTVWXYZ'.split(''));
    const ulid = fc
      .tuple(fc.constantFrom(...'01234567'.split('')), fc.array(crock, { minLength: 25, maxLength: 25 }))
      .map(([h, t]) => h + t.join(''));
    fc.assert(
      fc.property(ulid, fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }), (id, a, b) => {
        const x = deriveEventId(id, a);
        const y = deriveEventId(id, b);
        expect(isUlid(x)).toBe(true);
        expect(x.slice(0, 10)).toBe(id.slice(0, 10));
        expect(x === y).toBe(a === b);
        if (!id.slice(10).startsWith('ZZZZZZZZZZZZ')) expect(x < y).toBe(a < b);
      }),
    );
  });
});
