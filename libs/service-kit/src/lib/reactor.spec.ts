import {
  InMemoryEventLog,
  LogUnavailableError,
  type EventLog,
  type LogEvent,
  type StoredEvent,
  type Subscription,
} from '@conclave/event-log';
import { Readiness } from './readiness';
import { Reactor, type ReactorDefinition, type SnapshotPolicy } from './reactor';
import { MemorySnapshots } from './snapshot-store';

type E = LogEvent & { data: { n: number } };
const ev = (i: number): E => ({ event_id: `e${String(i).padStart(6, '0')}`, type: 'Counted', data: { n: i } });
const until = async (check: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

/** A reactor that sums what it sees, keeping the list to prove each event came once. */
function summing(seen: number[] = []) {
  const state = { sum: 0, seen };
  const definition: ReactorDefinition<E> = {
    name: 'sum',
    categories: ['count'],
    apply: (e: StoredEvent<E>) => {
      state.sum += e.event.data.n;
      state.seen.push(e.event.data.n);
    },
    snapshot: {
      schema: 1,
      take: () => ({ sum: state.sum }),
      restore: (s) => {
        state.sum = (s as { sum: number }).sum;
      },
    },
  };
  return { state, definition };
}

async function append(log: InMemoryEventLog<E>, from: number, to: number) {
  for (let i = from; i <= to; i++) await log.append(`count-${i}`, [ev(i)], 'no_stream');
}

/**
 * `log` whose first subscription ends with an outage at the event numbered `at`: after that
 * event's handler (`'after'`: a server gone, the subscription stopped), or as it begins
 * (`'during'`: a stall noticed while the event is still being applied, the subscription left
 * delivering). `seen.resumedCaughtUp` turns true once a later subscription has caught up.
 */
function losingFirstSubscription(log: InMemoryEventLog<E>, at: number, when: 'after' | 'during') {
  const seen = { resumedCaughtUp: false };
  let first = true;
  const proxy = new Proxy(log, {
    get: (t, p) =>
      p === 'subscribe'
        ? (cats: never, from: never, handler: (e: StoredEvent<E>) => Promise<void>): Subscription => {
            const dying = first;
            first = false;
            let reject!: (e: unknown) => void;
            const closed = new Promise<void>((_, r) => (reject = r));
            const lose = () => reject(new LogUnavailableError('subscribe', undefined, { cause: new Error('server gone') }));
            const sub: Subscription = t.subscribe(cats, from, async (e) => {
              if (dying && when === 'during' && e.event.data.n === at) lose();
              await handler(e);
              if (dying && when === 'after' && e.event.data.n === at) {
                void sub.stop();
                lose();
              }
            });
            if (!dying) void sub.caughtUp.then(() => (seen.resumedCaughtUp = true));
            return { caughtUp: sub.caughtUp, closed: Promise.race([closed, sub.closed]), stop: () => sub.stop() };
          }
        : (t as never)[p],
  }) as EventLog<E>;
  return { log: proxy, seen };
}

describe('Reactor', () => {
  it('given a saved snapshot, when a new instance starts, then it restores it and handles only the events after it, ending in the same state as a full rebuild', async () => {
    const log = new InMemoryEventLog<E>();
    const snapshots = new MemorySnapshots();
    const policy = { store: snapshots, name: 'svc-sum', everyEvents: 10, everyMs: 60_000 };
    await append(log, 1, 25);
    const first = summing();
    const a = new Reactor(log, first.definition, jest.fn(), 60_000, undefined, policy);
    await a.start();
    await a.stop();
    await append(log, 26, 30);

    const second = summing();
    const b = new Reactor(log, second.definition, jest.fn(), 60_000, undefined, policy);
    await b.start();
    expect(b.resumedFrom).not.toBe('start');
    expect(second.state.seen).toEqual([26, 27, 28, 29, 30]);
    const rebuilt = summing();
    const c = new Reactor(log, rebuilt.definition, jest.fn(), 60_000);
    await c.start();
    expect(second.state.sum).toBe(rebuilt.state.sum);
    await Promise.all([b.stop(), c.stop()]);
  });

  /** A summing reactor over `store`, with snapshots every 10 events. */
  const overStore = (
    log: InMemoryEventLog<E>,
    definition: ReactorDefinition<E>,
    store: SnapshotPolicy['store'],
    timeouts: Partial<SnapshotPolicy>,
  ) =>
    new Reactor(log, definition, jest.fn(), 60_000, undefined, { store, name: 'svc-sum', everyEvents: 10, everyMs: 60_000, ...timeouts });

  it('given an event being applied when a start has caught up, when the start takes its snapshot, then the snapshot pairs state and position exactly, and a replica restoring it ends where a rebuild does', async () => {
    // Given: a reactor whose apply changes its state, then waits (as an apply that awaits does);
    // the sixth event is appended as the start catches up, and held in its apply.
    const log = new InMemoryEventLog<E>();
    const snapshots = new MemorySnapshots();
    const policy = { store: snapshots, name: 'svc-sum', everyEvents: 1_000, everyMs: 60_000 };
    await append(log, 1, 5);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let sixthBegun = false;
    const state = { sum: 0 };
    const definition: ReactorDefinition<E> = {
      name: 'sum',
      categories: ['count'],
      apply: async (e) => {
        state.sum += e.event.data.n;
        if (e.event.data.n === 6) {
          sixthBegun = true;
          await gate;
        }
      },
      caughtUp: async () => {
        await append(log, 6, 6);
        await until(() => sixthBegun);
      },
      snapshot: { schema: 1, take: () => ({ sum: state.sum }), restore: (s) => void (state.sum = (s as { sum: number }).sum) },
    };
    const reactor = new Reactor(log, definition, jest.fn(), 60_000, undefined, policy);

    // When: the start ends (and snapshots) while the sixth event is still in its apply.
    await reactor.start();
    release();
    await until(() => reactor.handled === 6);
    await append(log, 7, 8);

    // Then: a replica restoring the snapshot of that start ends with the same sum as a full rebuild.
    const replica = summing();
    const b = new Reactor(log, replica.definition, jest.fn(), 60_000, undefined, policy);
    await b.start();
    const rebuilt = summing();
    const c = new Reactor(log, rebuilt.definition, jest.fn(), 60_000);
    await c.start();
    expect(b.resumedFrom).not.toBe('start');
    expect(replica.state.sum).toBe(36);
    expect(rebuilt.state.sum).toBe(36);
    await Promise.all([reactor.stop(), b.stop(), c.stop()]);
  });

  it('given a snapshot store that never answers, when the reactor starts, then it rebuilds from the log instead of waiting', async () => {
    const log = new InMemoryEventLog<E>();
    await append(log, 1, 5);
    const hanging = { load: () => new Promise<never>(() => undefined), save: async () => undefined };
    const { state, definition } = summing();
    const reactor = overStore(log, definition, hanging, { loadTimeoutMs: 50 });
    await reactor.start();
    expect(reactor.resumedFrom).toBe('start');
    expect(state.seen).toEqual([1, 2, 3, 4, 5]);
    await reactor.stop();
  });

  it('given a snapshot store whose saves never answer, when events keep coming, then every event is handled, one save at a time is tried, and a stop does not wait for ever', async () => {
    // Given: a store that accepts a save and never acknowledges it.
    const log = new InMemoryEventLog<E>();
    let saves = 0;
    const hanging = { load: async () => undefined, save: () => (saves++, new Promise<never>(() => undefined)) };
    const { state, definition } = summing();
    const reactor = overStore(log, definition, hanging, { saveTimeoutMs: 200 });
    await reactor.start();

    // When: 100 events come, ten snapshots' worth, while the first save hangs.
    await append(log, 1, 100);
    await until(() => state.seen.length === 100);

    // Then: all are handled once, in order, and the saves never piled up.
    expect(state.seen).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(saves).toBeLessThanOrEqual(2);
    expect(reactor.isFollowing).toBe(true);
    await reactor.stop();
  });

  it('given a subscription lost to a log outage, then the reactor is not ready until it resumes after the last event handled, and handles every event exactly once', async () => {
    const log = new InMemoryEventLog<E>();
    // The first live subscription dies with an outage after the third event.
    const { log: flaky } = losingFirstSubscription(log, 3, 'after');
    const readiness = new Readiness();
    const { state, definition } = summing();
    const fatal = jest.fn();
    const reactor = new Reactor(flaky, definition, fatal, 60_000, readiness);
    await reactor.start();
    expect(readiness.report().ready).toBe(true);
    await append(log, 1, 3);
    await until(() => !readiness.report().ready);
    await append(log, 4, 8);
    await until(() => state.seen.length === 8 && readiness.report().ready);
    expect(fatal).not.toHaveBeenCalled();
    expect(state.seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(readiness.report().ready).toBe(true);
    await reactor.stop();
  });

  it('given a subscription that ends while an event is still being applied, when the reactor resumes, then it starts after that event and never applies it twice', async () => {
    // Given: a reactor whose third event takes longer to apply than a resume waits, and a log
    // that ends the subscription as that apply begins.
    const log = new InMemoryEventLog<E>();
    const { log: flaky, seen: subscriptions } = losingFirstSubscription(log, 3, 'during');
    const seen: number[] = [];
    const definition: ReactorDefinition<E> = {
      name: 'slow',
      categories: ['count'],
      apply: async (e) => {
        if (e.event.data.n === 3) await new Promise((r) => setTimeout(r, 600));
        seen.push(e.event.data.n);
      },
    };
    const reactor = new Reactor(flaky, definition, jest.fn(), 60_000);
    await reactor.start();

    // When: five events come, the subscription ending under the third.
    await append(log, 1, 5);
    // (a second application would come during the resumed subscription's catch-up)
    await until(() => seen.length >= 5 && subscriptions.resumedCaughtUp, 5_000);

    // Then: each once, in order.
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    await reactor.stop();
  });

  it('given a first catch-up that times out (a loaded server), when the reactor starts, then it tries again and starts, instead of failing the start', async () => {
    const log = new InMemoryEventLog<E>();
    await append(log, 1, 5);
    let attempts = 0;
    const timingOut = new Proxy(log, {
      get: (t, p) =>
        p === 'subscribe'
          ? (cats: never, from: never, handler: (e: StoredEvent<E>) => Promise<void>): Subscription => {
              if (++attempts > 2) return t.subscribe(cats, from, handler);
              const failed = Promise.reject(new LogUnavailableError('subscribe', undefined, { cause: new Error('TIMEOUT') }));
              failed.catch(() => undefined);
              return { caughtUp: failed, closed: failed, stop: async () => undefined };
            }
          : (t as never)[p],
    }) as EventLog<E>;
    const { state, definition } = summing();
    const fatal = jest.fn();
    const reactor = new Reactor(timingOut, definition, fatal, 60_000, new Readiness());

    await reactor.start();

    expect(attempts).toBe(3);
    expect(state.seen).toEqual([1, 2, 3, 4, 5]);
    expect(fatal).not.toHaveBeenCalled();
    await reactor.stop();
  });

  it('given a first catch-up that fails with a handler error (a bug, not an outage), when the reactor starts, then the start fails at once', async () => {
    const log = new InMemoryEventLog<E>();
    await append(log, 1, 2);
    const definition: ReactorDefinition<E> = {
      name: 'broken',
      categories: ['count'],
      apply: () => {
        throw new TypeError('a bug');
      },
    };
    const reactor = new Reactor(log, definition, jest.fn(), 60_000, new Readiness());
    await expect(reactor.start()).rejects.toBeInstanceOf(TypeError);
  });

  it('given a subscription that ends without being asked to (it resolves as if stopped), then the reactor resumes rather than stay ready while following nothing', async () => {
    const log = new InMemoryEventLog<E>();
    let first = true;
    let endIt!: () => void;
    const ending = new Proxy(log, {
      get: (t, p) =>
        p === 'subscribe'
          ? (cats: never, from: never, handler: (e: StoredEvent<E>) => Promise<void>): Subscription => {
              const sub = t.subscribe(cats, from, handler);
              if (!first) return sub;
              first = false;
              const ended = new Promise<void>((r) => (endIt = r));
              return { caughtUp: sub.caughtUp, closed: ended.then(() => sub.stop()), stop: () => sub.stop() };
            }
          : (t as never)[p],
    }) as EventLog<E>;
    const { state, definition } = summing();
    const reactor = new Reactor(ending, definition, jest.fn(), 60_000, new Readiness());
    await reactor.start();
    endIt();
    await until(() => !reactor.isFollowing);
    await append(log, 1, 4);
    await until(() => state.seen.length === 4);
    expect(state.seen).toEqual([1, 2, 3, 4]);
    await until(() => reactor.isFollowing);
    expect(reactor.isFollowing).toBe(true);
    await reactor.stop();
  });

  it('given a handler that fails (a bug, a corrupt record), then the reactor is fatal: not ready, and the fatal handler is told', async () => {
    const log = new InMemoryEventLog<E>();
    const fatal = jest.fn();
    const readiness = new Readiness();
    const reactor = new Reactor(
      log,
      {
        name: 'broken',
        categories: ['count'],
        apply: (e) => {
          if (e.event.data.n === 2) throw new Error('cannot fold');
        },
      },
      fatal,
      60_000,
      readiness,
    );
    await reactor.start();
    await append(log, 1, 2);
    await until(() => fatal.mock.calls.length > 0);
    expect(fatal).toHaveBeenCalledWith('reactor broken', expect.any(Error));
    expect(readiness.report().ready).toBe(false);
    await reactor.stop();
  });
});
