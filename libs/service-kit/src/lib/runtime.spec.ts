import { decodeTime, isValid } from 'ulid';
import { ulidGenerator } from './runtime';

describe('ulidGenerator', () => {
  it('given many ids in one millisecond, then each is a valid ULID of now, all distinct, and not monotonic (derived event ids must not collide)', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => ulidGenerator.next());
    expect(ids.every(isValid)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => decodeTime(id) >= before && decodeTime(id) <= Date.now())).toBe(true);
    // A monotonic generator would give sorted ids within a millisecond; random ones are not.
    const sortedRuns = ids.slice(1).filter((id, i) => id > ids[i]).length;
    expect(sortedRuns).toBeLessThan(ids.length - 1);
  });
});
