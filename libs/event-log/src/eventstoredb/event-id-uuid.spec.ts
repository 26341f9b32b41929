import fc from 'fast-check';
import { ulid } from 'ulid';
import { eventIdToUuid, uuidToUlid } from './event-id-uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const crockford = fc.constantFrom(...'0123456789ABCDEFGHJKMNPQRSTVWXYZ'.split(''));
const ulidArb = fc
  .tuple(fc.constantFrom(...'01234567'.split('')), fc.array(crockford, { minLength: 25, maxLength: 25 }))
  .map(([h, t]) => h + t.join(''));

describe('eventIdToUuid', () => {
  it('maps a ULID to the UUID holding the same 128 bits, and back', () => {
    fc.assert(
      fc.property(ulidArb, (id) => {
        const u = eventIdToUuid(id);
        expect(u).toMatch(UUID);
        expect(uuidToUlid(u)).toBe(id);
        expect(eventIdToUuid(id.toLowerCase())).toBe(u);
      }),
      { verbose: true },
    );
  });

  it('keeps the time order of ULIDs', () => {
    const a = ulid(1_000);
    const b = ulid(2_000);
    expect(eventIdToUuid(a) < eventIdToUuid(b)).toBe(true);
  });

  it('is deterministic for other ids, and distinct ids map to distinct UUIDs', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (x, y) => {
        fc.pre(!/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i.test(x) && !/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i.test(y));
        fc.pre(!UUID.test(x.toLowerCase()) && !UUID.test(y.toLowerCase()));
        expect(eventIdToUuid(x)).toBe(eventIdToUuid(x));
        expect(eventIdToUuid(x)).toMatch(UUID);
        if (x !== y) expect(eventIdToUuid(x)).not.toBe(eventIdToUuid(y));
      }),
      { verbose: true },
    );
    expect(eventIdToUuid('6F9619FF-8B86-D011-B42D-00CF4FC964FF')).toBe('6f9619ff-8b86-d011-b42d-00cf4fc964ff');
  });
});
