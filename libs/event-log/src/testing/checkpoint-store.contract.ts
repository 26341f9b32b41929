/**
 * The projection runner over a checkpoint store: run unchanged against each CheckpointStore.
 * Uses Jest globals; imported by spec files only.
 */
import { CheckpointConflictError } from '../core/errors';
import { deferred } from '../core/internal';
import { InMemoryEventLog } from '../memory/memory-event-log';
import { within, type TestEvent } from './event-log.contract';
import type { CheckpointStore } from '../projection/checkpoint-store';
import { ProjectionRunner, type Projection } from '../projection/projection-runner';

export interface Seen {
  ids: string[];
}
const ev = (i: number): TestEvent => ({ event_id: `e${String(i).padStart(5, '0')}`, type: 'E', data: { n: i } });
const projection: Projection<Seen, TestEvent> = {
  name: 'seen',
  categories: ['order'],
  initial: () => ({ ids: [] }),
  apply: (s, e) => {
    s.ids.push(e.event.event_id);
    return s;
  },
};

async function seed(log: InMemoryEventLog<TestEvent>, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) await log.append(`order-${i % 7}`, [ev(i)], 'any');
}

/** Runs the projection over a checkpoint store and a given number of events, from a fixed log. */
export function describeCheckpointStore(name: string, open: () => Promise<{ store: CheckpointStore<Seen>; dispose(): Promise<void> }>): void {
  describe(`ProjectionRunner with ${name}`, () => {
    let store: CheckpointStore<Seen>;
    let dispose: () => Promise<void>;
    let log: InMemoryEventLog<TestEvent>;
    beforeEach(async () => {
      ({ store, dispose } = await open());
      log = new InMemoryEventLog<TestEvent>();
      await seed(log, 0, 50);
      await log.append('other-1', [{ event_id: 'x1', type: 'X', data: {} }], 'any');
    });
    afterEach(async () => {
      await log.close();
      await dispose();
    });

    it('catches up, stores position with state, and resumes after a crash without applying twice', async () => {
      const run1 = new ProjectionRunner(log, projection, store, { saveEvery: 8, saveAfterMs: 0 });
      await run1.start();
      expect(run1.current.state.ids).toHaveLength(50);
      await run1.stop();
      const saved = await store.load('seen');
      expect(saved?.state.ids).toHaveLength(50);
      expect(saved?.position).toBe(run1.current.position);

      // A runner that crashes: its store fails on the second save, after 58 events were saved.
      await seed(log, 50, 70);
      let saves = 0;
      const failing: CheckpointStore<Seen> = {
        load: (n) => store.load(n),
        delete: (n) => store.delete(n),
        save: async (n, c, r) => {
          if (++saves === 2) throw new Error('disk gone');
          return store.save(n, c, r);
        },
      };
      const crashing = new ProjectionRunner(log, projection, failing, { saveEvery: 8, saveAfterMs: 0 });
      await expect(crashing.start()).rejects.toThrow('disk gone');
      await expect(crashing.failed).rejects.toThrow('disk gone');
      expect((await store.load('seen'))?.state.ids).toHaveLength(58);
      await seed(log, 70, 83);
      const run3 = new ProjectionRunner(log, projection, store, { saveEvery: 8, saveAfterMs: 0 });
      await run3.start();
      // Every event once, in log order: the unsaved tail of the crashed run is applied again, once.
      expect(run3.current.state.ids).toEqual(Array.from({ length: 83 }, (_, i) => ev(i).event_id).sort(byLog(log)));
      await run3.stop();
    });

    it('skips events at or before its checkpoint', async () => {
      const run = new ProjectionRunner(log, projection, store, { saveEvery: 1, saveAfterMs: 0 });
      await run.start();
      const handle = (run as unknown as { handle(e: unknown): void }).handle.bind(run);
      const replay = log.allEvents().filter((e) => e.category === 'order');
      for (const e of replay) handle(e);
      expect(run.current.state.ids).toHaveLength(50);
      await run.stop();
    });

    it('follows live events and saves them after a quiet period', async () => {
      const run = new ProjectionRunner(log, projection, store, { saveEvery: 1000, saveAfterMs: 20 });
      await run.start();
      const saved = deferred<void>();
      const origSave = store.save.bind(store);
      store.save = async (...args) => {
        const r = await origSave(...args);
        if (args[1].state.ids.length === 52) saved.resolve();
        return r;
      };
      await seed(log, 50, 52);
      await within(saved.promise, 5_000, 'the quiet-period save');
      expect((await store.load('seen'))?.state.ids).toHaveLength(52);
      await run.stop();
    });

    it('rebuilds from zero', async () => {
      const run = new ProjectionRunner(log, projection, store, { saveEvery: 10, saveAfterMs: 0 });
      await run.start();
      await run.rebuild();
      expect(run.current.state.ids).toHaveLength(50);
      expect(new Set(run.current.state.ids).size).toBe(50);
      await run.stop();
      expect((await store.load('seen'))?.state.ids).toHaveLength(50);
    });

    it('stops with CheckpointConflictError when another runner of the same projection saved meanwhile', async () => {
      const a = new ProjectionRunner(log, projection, store, { saveEvery: 1, saveAfterMs: 0 });
      await a.start();
      const b = new ProjectionRunner(log, projection, store, { saveEvery: 1, saveAfterMs: 0 });
      await b.start();
      await seed(log, 50, 51);
      await expect(within(Promise.race([a.failed, b.failed]), 5_000, 'a conflict')).rejects.toBeInstanceOf(
        CheckpointConflictError,
      );
      await Promise.all([a.stop().catch(() => undefined), b.stop().catch(() => undefined)]);
    });
  });
}

function byLog(log: InMemoryEventLog<TestEvent>): (a: string, b: string) => number {
  const order = new Map(log.allEvents().map((e, i) => [e.event.event_id, i]));
  return (a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0);
}

