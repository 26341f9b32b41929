import fc from 'fast-check';
import { ReadOnce } from './read-once';

describe('ReadOnce: each stream sequence read once, whatever order its copies come in', () => {
  it('given 2 and 3 read, when 1 comes (a delivery lost in transit, redelivered late), then it is read', () => {
    const once = new ReadOnce();
    for (const seq of [2, 3]) once.markRead(seq);
    expect(once.isNew(1)).toBe(true);
  });

  it('given 1 read, when a copy of 1 comes (its acknowledgement lost), then it is not read again', () => {
    const once = new ReadOnce();
    once.markRead(1);
    expect(once.isNew(1)).toBe(false);
  });

  it('given an ack floor of 5, when a copy of 4 comes that this reader never held (another reader acknowledged it), then it is not read', () => {
    const once = new ReadOnce();
    once.acknowledgedThrough(5);
    expect(once.isNew(4)).toBe(false);
    expect(once.isNew(6)).toBe(true);
  });

  it('given sequences read up to 100, when the ack floor reaches 90, then only the ten above it are held', () => {
    const once = new ReadOnce();
    for (let seq = 1; seq <= 100; seq++) once.markRead(seq);
    once.acknowledgedThrough(90);
    once.acknowledgedThrough(50); // an older answer changes nothing
    expect(once.size).toBe(10);
    expect(once.isNew(90)).toBe(false);
    expect(once.isNew(95)).toBe(false);
  });

  it('property: any deliveries (copies, out of order) with the ack floor as a single reader makes it, read every sequence delivered exactly once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ seq: fc.integer({ min: 1, max: 60 }), askFloor: fc.boolean() }), { maxLength: 300 }),
        (deliveries) => {
          const once = new ReadOnce();
          const read: number[] = [];
          for (const { seq, askFloor } of deliveries) {
            if (once.isNew(seq)) {
              read.push(seq);
              once.markRead(seq); // read and acknowledged
            }
            if (askFloor) {
              // The server's ack floor: the highest sequence with every one up to it acknowledged.
              const acked = new Set(read);
              let floor = 0;
              while (acked.has(floor + 1)) floor++;
              once.acknowledgedThrough(floor);
            }
          }
          expect(read.length).toBe(new Set(read).size);
          expect(new Set(read)).toEqual(new Set(deliveries.map((d) => d.seq)));
        },
      ),
    );
  });
});
