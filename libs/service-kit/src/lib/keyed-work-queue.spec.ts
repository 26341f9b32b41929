import { KeyedWorkQueue } from './keyed-work-queue';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('KeyedWorkQueue', () => {
  it('given two tasks on one key, then the second starts only after the first ends', async () => {
    const q = new KeyedWorkQueue(10, () => undefined);
    const order: string[] = [];
    const gate = deferred();
    await q.submit('a', async () => {
      order.push('a1 start');
      await gate.promise;
      order.push('a1 end');
    });
    await q.submit('a', async () => {
      order.push('a2');
    });
    await q.submit('b', async () => {
      order.push('b1');
    });
    await Promise.resolve();
    expect(order).toEqual(['a1 start', 'b1']);
    gate.resolve();
    await q.drain();
    expect(order).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('given a full queue, then submit waits for capacity', async () => {
    const q = new KeyedWorkQueue(1, () => undefined);
    const gate = deferred();
    await q.submit('a', () => gate.promise);
    let accepted = false;
    const second = q.submit('b', async () => undefined).then(() => (accepted = true));
    await Promise.resolve();
    expect(accepted).toBe(false);
    gate.resolve();
    await second;
    expect(accepted).toBe(true);
    await q.drain();
  });

  it('given a failing task, then the error is reported and later tasks of the key still run', async () => {
    const errors: unknown[] = [];
    const q = new KeyedWorkQueue(4, (_k, e) => errors.push(e));
    let ran = false;
    await q.submit('a', async () => {
      throw new Error('boom');
    });
    await q.submit('a', async () => {
      ran = true;
    });
    await q.drain();
    expect(errors).toHaveLength(1);
    expect(ran).toBe(true);
  });
});
