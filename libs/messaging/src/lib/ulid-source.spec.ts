import { decodeTime } from 'ulid';
import { newUlid } from './ulid-source';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('newUlid', () => {
  it('given 10,000 draws across several pool refills, then each is a ULID dated between the first draw and the last, and none repeats', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => newUlid());
    const after = Date.now();
    expect(ids.every((id) => ULID.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [ids[0], ids[ids.length - 1]]) {
      expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
      expect(decodeTime(id)).toBeLessThanOrEqual(after);
    }
  });

  it('given many ids, then the random part uses all 32 characters (the pool is not a constant)', () => {
    const chars = new Set(Array.from({ length: 2_000 }, () => newUlid().slice(10)).join(''));
    expect(chars.size).toBe(32);
  });
});
