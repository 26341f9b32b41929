import fc from 'fast-check';
import { InMemoryEventLog } from '../memory/memory-event-log';
import type { TestEvent } from '../testing/event-log.contract';
import { handleCommand, type Decider } from '../command/handle-command';
import type { EventLog, ReadResult } from '../core/types';
import { AggregateCache } from './aggregate-cache';

type Count = { readonly n: number; readonly ids: readonly string[] };
const ev = (id: string): TestEvent => ({ event_id: id, type: 'E', data: {} });
const options = {
  categories: ['proposal'] as const,
  initial: (): Count => ({ n: 0, ids: [] }),
  evolve: (s: Count, e: TestEvent): Count => ({ n: s.n + 1, ids: [...s.ids, e.event_id] }),
};
const fold = (events: readonly { event: TestEvent }[]): Count => events.reduce((s, e) => options.evolve(s, e.event), options.initial());
const settle = () => new Promise((r) => setTimeout(r, 5));

/** A log whose reads take a snapshot at once and answer only when the test opens the gate. */
class SlowReads {
  gate: (() => void) | undefined;
  constructor(readonly log: InMemoryEventLog<TestEvent>) {}
  wrap(): EventLog<TestEvent> {
    const read = async (stream: string): Promise<ReadResult<TestEvent>> => {
      const snapshot = await this.log.read(stream);
      await new Promise<void>((r) => (this.gate = r));
      return snapshot;
    };
    return new Proxy(this.log, { get: (t, p) => (p === 'read' ? read : (t as never)[p]) }) as EventLog<TestEvent>;
  }
}

describe('AggregateCache: a read racing its own subscription', () => {
  it('given a read that returns before an event the subscription delivered meanwhile, when it is stored, then the entry includes that event', async () => {
    const log = new InMemoryEventLog<TestEvent>();
    const slow = new SlowReads(log);
    const cache = new AggregateCache(slow.wrap(), options);
    await cache.start();
    await log.append('proposal-A', [ev('a1')], 'no_stream');

    const reading = cache.reload('proposal-A'); // snapshot: a1
    await settle();
    await log.append('proposal-A', [ev('a2')], '0'); // delivered while the read is in flight
    await settle();
    slow.gate!();
    await reading;

    await log.append('proposal-A', [ev('a3')], '1');
    await settle();

    // Checked against the log's version, as a query does: the state must hold all three.
    const loaded = await cache.load('proposal-A');
    expect(loaded.version).toBe('2');
    expect(loaded.state.ids).toEqual(['a1', 'a2', 'a3']);
    await cache.stop();
  });

  it('given an entry behind the log by one event it never saw, when the next event arrives, then the entry is evicted rather than extended over the gap', async () => {
    const log = new InMemoryEventLog<TestEvent>();
    const cache = new AggregateCache(log, options);
    await log.append('proposal-B', [ev('b1')], 'no_stream');
    await cache.reload('proposal-B'); // cached at version 0, no subscription yet
    await log.append('proposal-B', [ev('b2')], '0'); // never delivered to the cache
    await cache.start(); // follows from the head: b2 is behind it
    await log.append('proposal-B', [ev('b3')], '1');
    await settle();

    expect(cache.stats.gaps).toBe(1);
    const loaded = await cache.load('proposal-B', { freshness: 'cache' });
    expect(loaded.cached).toBe(false);
    expect(loaded.state).toEqual(fold((await log.read('proposal-B')).events));
    await cache.stop();
  });

  it('given an entry further along than a read, when the read finishes, then the entry is kept', async () => {
    const log = new InMemoryEventLog<TestEvent>();
    const slow = new SlowReads(log);
    const cache = new AggregateCache(slow.wrap(), options);
    await cache.start();
    await log.append('proposal-C', [ev('c1')], 'no_stream');
    const first = cache.reload('proposal-C');
    await settle();
    slow.gate!();
    await first;
    const second = cache.reload('proposal-C'); // snapshot: c1
    await settle();
    await cache.append('proposal-C', [ev('c2')], '0');
    slow.gate!();
    await second;
    expect((await cache.load('proposal-C', { freshness: 'cache' })).state.ids).toEqual(['c1', 'c2']);
    await cache.stop();
  });
});

/** A log that lets the next append in whatever version it expects, as a clustered JetStream can during a leader election. */
function admittingStale(log: InMemoryEventLog<TestEvent>): { log: EventLog<TestEvent>; admitNext: () => void } {
  let admit = false;
  const append: EventLog<TestEvent>['append'] = (stream, events, expected, metadata) => {
    const e = admit ? 'any' : expected;
    admit = false;
    return log.append(stream, events, e, metadata);
  };
  return {
    log: new Proxy(log, { get: (t, p) => (p === 'append' ? append : (t as never)[p]) }) as EventLog<TestEvent>,
    admitNext: () => (admit = true),
  };
}

describe('AggregateCache: an append the log let in on a stale version', () => {
  it('given a writer whose append was let in after another commit it never saw, when the subscription delivers that commit, then the entry is evicted and the next load folds both', async () => {
    // Given an entry at a1, another writer's b at the same expected version, and this writer's c let in after it
    const base = new InMemoryEventLog<TestEvent>();
    const { log, admitNext } = admittingStale(base);
    const cache = new AggregateCache(log, options); // fed by hand below, in the order that loses b
    await base.append('proposal-F', [ev('a1')], 'no_stream');
    await cache.reload('proposal-F');
    await base.append('proposal-F', [ev('b')], '0');
    admitNext();
    await cache.append('proposal-F', [ev('c')], '0');

    // When the subscription delivers b, then c
    const stored = (await base.read('proposal-F')).events;
    cache.feed(stored[1]);
    cache.feed(stored[2]);

    // Then the entry folded without b is gone, and a load reads both from the log
    expect(cache.stats.gaps).toBe(1);
    const loaded = await cache.load('proposal-F', { freshness: 'cache' });
    expect(loaded.cached).toBe(false);
    expect(loaded.state.ids).toEqual(['a1', 'b', 'c']);
  });

  it('given an append of several events that this writer folded ahead of the subscription, when the subscription delivers them, then the entry is kept', async () => {
    const log = new InMemoryEventLog<TestEvent>();
    const cache = new AggregateCache(log, options);
    await log.append('proposal-G', [ev('g1')], 'no_stream');
    await cache.reload('proposal-G');
    await cache.append('proposal-G', [ev('g2'), ev('g3'), ev('g4')], '0');

    for (const e of (await log.read('proposal-G')).events) cache.feed(e);

    expect(cache.stats.gaps).toBe(0);
    const loaded = await cache.load('proposal-G');
    expect(loaded.cached).toBe(true);
    expect(loaded.state.ids).toEqual(['g1', 'g2', 'g3', 'g4']);
  });
});

/** Adds one event per command until `limit`; past it, a typed refusal (like a closed quorum). */
class Full extends Error {}
const counter = (limit: number): Decider<Count, { id: string }, TestEvent> => ({
  decide: (c, s) => {
    if (s.n >= limit) throw new Full();
    return [ev(c.id)];
  },
  evolve: options.evolve,
  initialState: options.initial,
});

describe('handleCommand: concurrent writers on caches of their own', () => {
  it('given bursts of concurrent commands through several caches, then every accepted command is in the log exactly once, every refusal was right, and every cache agrees with the log', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 3 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 }), fc.nat(3)), { minLength: 5, maxLength: 40 }),
        async (replicas, plan) => {
          const log = new InMemoryEventLog<TestEvent>();
          const caches = Array.from({ length: replicas }, () => new AggregateCache(log, options));
          await Promise.all(caches.map((c) => c.start()));
          const limit = 6;
          const outcomes = await Promise.all(
            plan.map(async ([stream, replica, delay], i) => {
              await new Promise((r) => setTimeout(r, delay));
              try {
                const r = await handleCommand(caches[replica % replicas], `proposal-S${stream}`, counter(limit), { id: `e${i}` });
                return { i, stream, ok: true as const, n: r.state.n };
              } catch (e) {
                if (!(e instanceof Full)) throw e;
                return { i, stream, ok: false as const, n: -1 };
              }
            }),
          );
          await settle();
          for (let s = 0; s <= 3; s++) {
            const r = await log.read(`proposal-S${s}`);
            const ids = r.events.map((e) => e.event.event_id);
            const accepted = outcomes.filter((o) => o.stream === s && o.ok).map((o) => `e${o.i}`);
            const refused = outcomes.filter((o) => o.stream === s && !o.ok);
            expect(new Set(ids).size).toBe(ids.length);
            expect([...ids].sort()).toEqual([...accepted].sort());
            // A refusal is only right when the aggregate really was full.
            if (refused.length > 0) expect(ids.length).toBe(limit);
            for (const o of outcomes.filter((x) => x.stream === s && x.ok)) expect(o.n).toBe(ids.indexOf(`e${o.i}`) + 1);
            for (const c of caches) {
              const loaded = await c.load(`proposal-S${s}`, { freshness: 'cache' });
              if (loaded.cached) expect(loaded.state).toEqual(fold(r.events));
            }
          }
          await Promise.all(caches.map((c) => c.stop()));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('given bursts of concurrent commands on a log that sometimes lets an append in on a stale version, then no command is lost or doubled, and every entry a cache serves is the fold of the log', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 3 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 2 }), fc.nat(3)), { minLength: 5, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        async (replicas, plan, stale) => {
          const base = new InMemoryEventLog<TestEvent>();
          // The n-th append is let in whatever it expects when stale[n] says so.
          let appends = 0;
          const append: EventLog<TestEvent>['append'] = (stream, events, expected, metadata) =>
            base.append(stream, events, stale[appends++ % stale.length] ? 'any' : expected, metadata);
          // Deliveries lag a little, as a subscription does: an append's reply often comes first.
          const delivered: number[] = [];
          const subscribe: EventLog<TestEvent>['subscribe'] = (categories, from, handler) => {
            const k = delivered.push(0) - 1;
            return base.subscribe(categories, from, (e) =>
              new Promise<void>((r) => setTimeout(() => r(handler(e)), 1)).then(() => void delivered[k]++),
            );
          };
          const log = new Proxy(base, {
            get: (t, p) => (p === 'append' ? append : p === 'subscribe' ? subscribe : (t as never)[p]),
          }) as EventLog<TestEvent>;
          const caches = Array.from({ length: replicas }, () => new AggregateCache(log, options));
          await Promise.all(caches.map((c) => c.start()));
          const outcomes = await Promise.all(
            plan.map(async ([stream, replica, delay], i) => {
              await new Promise((r) => setTimeout(r, delay));
              await handleCommand(caches[replica % replicas], `proposal-S${stream}`, counter(1_000), { id: `e${i}` });
              return { i, stream };
            }),
          );
          // Then, once every cache has been delivered every event
          let total = 0;
          for (let s = 0; s <= 2; s++) total += (await base.read(`proposal-S${s}`)).events.length;
          while (delivered.some((n) => n < total)) await new Promise((r) => setTimeout(r, 1));
          for (let s = 0; s <= 2; s++) {
            const r = await base.read(`proposal-S${s}`);
            const ids = r.events.map((e) => e.event.event_id);
            expect([...ids].sort()).toEqual(
              outcomes
                .filter((o) => o.stream === s)
                .map((o) => `e${o.i}`)
                .sort(),
            );
            for (const c of caches) {
              const loaded = await c.load(`proposal-S${s}`, { freshness: 'cache' });
              expect(loaded.state).toEqual(fold(r.events));
            }
          }
          await Promise.all(caches.map((c) => c.stop()));
        },
      ),
      { numRuns: 30 },
    );
  }, 30_000);
});
