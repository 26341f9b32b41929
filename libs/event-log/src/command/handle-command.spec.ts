import { AggregateCache, type LoadedAggregate } from '../cache/aggregate-cache';
import { InMemoryEventLog } from '../memory/memory-event-log';
import type { TestEvent } from '../testing/event-log.contract';
import { handleCommand, type Decider } from './handle-command';

type Count = { readonly n: number };
type Add = { readonly id: string; readonly by: number };
const cacheOptions = {
  categories: ['counter'] as const,
  initial: (): Count => ({ n: 0 }),
  evolve: (s: Count, e: TestEvent): Count => ({ n: s.n + (e.data.n ?? 0) }),
};
const decider: Pick<Decider<Count, Add, TestEvent>, 'decide' | 'evolve'> = {
  decide: (c) => (c.by === 0 ? [] : [{ event_id: c.id, type: 'Added', data: { n: c.by } }]),
  evolve: cacheOptions.evolve,
};

/** What a guard saw each time it ran: the state decided on, the events, and the log's length then. */
type Seen = { state: Count; events: string[]; logged: number };

describe('handleCommand: a guard on other aggregates before the append (beforeAppend)', () => {
  let log: InMemoryEventLog<TestEvent>;
  let cache: AggregateCache<Count, TestEvent>;
  const logged = async () => (await log.read('counter-a')).events.length;

  beforeEach(async () => {
    log = new InMemoryEventLog<TestEvent>();
    cache = new AggregateCache(log, cacheOptions);
    await cache.start();
    await log.append('counter-a', [{ event_id: '01', type: 'Added', data: { n: 1 } }], 'no_stream');
  });
  afterEach(() => cache.stop());

  it('given a decision that appends, when it runs, then the guard sees the state decided on and the events, before they are in the log', async () => {
    const seen: Seen[] = [];
    const beforeAppend = async (loaded: LoadedAggregate<Count>, events: readonly TestEvent[]) => {
      seen.push({ state: loaded.state, events: events.map((e) => e.event_id), logged: await logged() });
    };

    const outcome = await handleCommand(cache, 'counter-a', decider, { id: '02', by: 2 }, { beforeAppend });

    expect(seen).toEqual([{ state: { n: 1 }, events: ['02'], logged: 1 }]);
    expect(outcome.state).toEqual({ n: 3 });
    expect(await logged()).toBe(2);
  });

  it('given a guard that refuses, when the command runs, then its error is the reply and nothing is appended', async () => {
    const refusal = new Error('refused by the guard');
    await expect(
      handleCommand(cache, 'counter-a', decider, { id: '02', by: 2 }, { beforeAppend: () => Promise.reject(refusal) }),
    ).rejects.toBe(refusal);
    expect(await logged()).toBe(1);
  });

  it('given another writer appending while the guard runs, when the append fails on the version, then the next attempt decides on the new state and guards again', async () => {
    const seen: Seen[] = [];
    const beforeAppend = async (loaded: LoadedAggregate<Count>, events: readonly TestEvent[]) => {
      seen.push({ state: loaded.state, events: events.map((e) => e.event_id), logged: await logged() });
      if (seen.length === 1) await log.append('counter-a', [{ event_id: 'other', type: 'Added', data: { n: 10 } }], loaded.version);
    };

    const outcome = await handleCommand(cache, 'counter-a', decider, { id: '02', by: 2 }, { beforeAppend });

    expect(seen).toEqual([
      { state: { n: 1 }, events: ['02'], logged: 1 },
      { state: { n: 11 }, events: ['02'], logged: 2 },
    ]);
    expect(outcome.state).toEqual({ n: 13 });
    expect((await log.read('counter-a')).events.map((e) => e.event.event_id)).toEqual(['01', 'other', '02']);
  });

  it('given a decision with nothing to append, when it runs, then the guard is not asked', async () => {
    const beforeAppend = jest.fn(() => Promise.resolve());
    await handleCommand(cache, 'counter-a', decider, { id: '02', by: 0 }, { beforeAppend });
    expect(beforeAppend).not.toHaveBeenCalled();
    expect(await logged()).toBe(1);
  });

  it('given an onConflict that returns a pause, when an append fails on the version, then the next attempt waits for it', async () => {
    const steps: string[] = [];
    let raced = false;
    const beforeAppend = async (loaded: LoadedAggregate<Count>) => {
      steps.push(`guard at n=${loaded.state.n}`);
      if (!raced) {
        raced = true;
        await log.append('counter-a', [{ event_id: 'other', type: 'Added', data: { n: 10 } }], loaded.version);
      }
    };
    const onConflict = async () => {
      steps.push('pause begins');
      await new Promise((r) => setTimeout(r, 5));
      steps.push('pause ends');
    };

    await handleCommand(cache, 'counter-a', decider, { id: '02', by: 2 }, { beforeAppend, onConflict });

    expect(steps).toEqual(['guard at n=1', 'pause begins', 'pause ends', 'guard at n=11']);
  });
});
