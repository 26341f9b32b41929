import { InMemoryEventLog } from '../memory/memory-event-log';
import { Collector, within, type TestEvent } from '../testing/event-log.contract';
import { AggregateCache } from './aggregate-cache';

type Count = { readonly n: number; readonly types: readonly string[] };
const ev = (id: string, type = 'E'): TestEvent => ({ event_id: id, type, data: {} });
const options = {
  categories: ['proposal'] as const,
  initial: (): Count => ({ n: 0, types: [] }),
  evolve: (s: Count, e: TestEvent): Count => ({ n: s.n + 1, types: [...s.types, e.type] }),
};

describe('AggregateCache (in-memory log)', () => {
  let log: InMemoryEventLog<TestEvent>;
  let cache: AggregateCache<Count, TestEvent>;
  beforeEach(async () => {
    log = new InMemoryEventLog<TestEvent>();
    cache = new AggregateCache(log, { ...options, maxEntries: 3 });
    await cache.start();
  });
  afterEach(async () => {
    await cache.stop();
    await log.close();
  });

  it('loads a missing aggregate as the initial state with no_stream', async () => {
    const a = await cache.load('proposal-A');
    expect(a).toEqual({ stream: 'proposal-A', state: { n: 0, types: [] }, version: 'no_stream', cached: false });
    const again = await cache.load('proposal-A');
    expect(again.cached).toBe(true);
  });

  it('serves the writer from the cache after its own append', async () => {
    const first = await cache.load('proposal-B');
    await cache.append('proposal-B', [ev('b1', 'Submitted'), ev('b2', 'Responded')], first.version);
    const loaded = await cache.load('proposal-B');
    expect(loaded.cached).toBe(true);
    expect(loaded.state.types).toEqual(['Submitted', 'Responded']);
    expect(loaded.version).toBe(await log.version('proposal-B'));
  });

  it('is kept fresh by the subscription when another writer appends', async () => {
    await log.append('proposal-C', [ev('c1')], 'no_stream');
    await cache.load('proposal-C');
    const seen = new Collector();
    const probe = log.subscribe(['proposal'], await log.head(), seen.handler);
    await log.append('proposal-C', [ev('c2'), ev('c3')], 'any');
    await seen.reached(2);
    // The cache's subscription was created first, so it has folded the commit by now.
    const loaded = await cache.load('proposal-C');
    expect(loaded.cached).toBe(true);
    expect(loaded.state.n).toBe(3);
    await probe.stop();
  });

  it('never serves a stale state: a version mismatch falls back to a full read', async () => {
    const lagging = new AggregateCache(log, options); // not started: no feed at all
    await log.append('proposal-D', [ev('d1')], 'no_stream');
    expect((await lagging.load('proposal-D')).state.n).toBe(1);
    await log.append('proposal-D', [ev('d2')], 'any');
    const loaded = await lagging.load('proposal-D');
    expect(loaded.cached).toBe(false);
    expect(loaded.state.n).toBe(2);
    expect(lagging.stats).toMatchObject({ hits: 0, misses: 2 });
  });

  it('evicts the least recently used aggregate', async () => {
    for (const s of ['proposal-E1', 'proposal-E2', 'proposal-E3']) await cache.load(s);
    await cache.load('proposal-E1'); // E2 is now the oldest
    await cache.load('proposal-E4');
    expect(cache.stats.entries).toBe(3);
    expect((await cache.load('proposal-E1')).cached).toBe(true);
    expect((await cache.load('proposal-E2')).cached).toBe(false);
  });

  it('ignores other categories and its own duplicate appends', async () => {
    const c = new AggregateCache(new InMemoryEventLog<TestEvent>(), options);
    const r = await within(c.load('proposal-F'), 1_000, 'load');
    await c.append('proposal-F', [ev('f1')], r.version);
    await c.append('proposal-F', [ev('f1')], r.version); // a retry: folded once
    expect((await c.load('proposal-F')).state.n).toBe(1);
  });
});
