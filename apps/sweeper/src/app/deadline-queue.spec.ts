import fc from 'fast-check';
import { DeadlineQueue } from './deadline-queue';

describe('DeadlineQueue (RFC 8.1/8.3: the sweeper wakes at the next expires_at)', () => {
  it('given deadlines in any order, when taken at a time, then exactly the due ones, earliest first', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 200 }), fc.integer({ min: 0, max: 1000 }), (deadlines, now) => {
        const q = new DeadlineQueue();
        deadlines.forEach((d, i) => q.schedule(`p${i}`, d));
        const due = q.takeDue(now);
        const expected = deadlines.map((d, i) => [d, `p${i}`] as const).filter(([d]) => d <= now);
        expect(due.sort()).toEqual(expected.map(([, id]) => id).sort());
        expect(q.size).toBe(deadlines.length - expected.length);
        const next = q.peek();
        if (next !== undefined) expect(next).toBeGreaterThan(now);
      }),
    );
  });

  it('given a cancelled proposal (resolved before its deadline), then it is never due', () => {
    const q = new DeadlineQueue();
    q.schedule('a', 10);
    q.schedule('b', 20);
    q.cancel('a');
    expect(q.peek()).toBe(20);
    expect(q.takeDue(100)).toEqual(['b']);
    expect(q.size).toBe(0);
  });

  it('given a rescheduled proposal, then only its latest deadline counts', () => {
    const q = new DeadlineQueue();
    q.schedule('a', 10);
    q.schedule('a', 50);
    expect(q.takeDue(20)).toEqual([]);
    expect(q.overdue(60)).toEqual(['a']);
    expect(q.takeDue(60)).toEqual(['a']);
  });
});
