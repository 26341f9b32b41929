/**
 * The event-log contract: one suite, run unchanged against every adapter
 * (`describeEventLogContract('jetstream', factory)`). Uses Jest globals, so it is imported by
 * spec files only and is not exported from the package index.
 *
 * Tests share one log per adapter run; each test isolates itself with its own categories and
 * stream ids (ULIDs), so they also hold against a log that already has data.
 */
import { monotonicFactory } from 'ulid';
import { ConcurrencyError, EventTooLargeError, InvalidAppendError, InvalidStreamNameError } from '../core/errors';
import { deferred, mapConcurrent } from '../core/internal';
import type { AppendResult, EventLog, ExpectedVersion, LogEvent, Position, StartFrom, StoredEvent, Subscription } from '../core/types';

export interface TestEvent extends LogEvent {
  readonly event_id: string;
  readonly type: string;
  readonly data: { readonly n?: number; readonly pad?: string };
}

export interface ContractSubject {
  readonly log: EventLog<TestEvent>;
  /** A second client on the same log, for racing writers; the same instance when there is only one. */
  readonly other: EventLog<TestEvent>;
  /** The configured limit of one append's encoded size. */
  readonly maxAppendBytes: number;
  dispose(): Promise<void>;
}

export interface ContractOptions {
  /** When set, every test is registered as skipped (so each name is reported), with this reason in the suite title. */
  readonly skip?: string;
  /** Timeout of the slow tests (10,000 streams). */
  readonly slowTimeoutMs?: number;
  /**
   * Tests this server cannot pass, by title, each registered as skipped with the reason in its
   * name (e.g. a server defect fixed in a later release).
   */
  readonly skipTests?: Readonly<Record<string, string>>;
}

const nextId = monotonicFactory();
const category = (): string => `t${nextId().toLowerCase()}`;
const ev = (type: string, n?: number, pad?: string): TestEvent => ({
  event_id: nextId(),
  type,
  data: { n, ...(pad === undefined ? {} : { pad }) },
});

/** Rejects with a message naming what was awaited, instead of hanging until Jest's timeout. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`deadline of ${ms} ms passed waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Collects delivered events and resolves `reached(n)` once n have arrived. */
export class Collector<E extends LogEvent = TestEvent> {
  readonly events: StoredEvent<E>[] = [];
  private waiters: { n: number; d: ReturnType<typeof deferred<void>> }[] = [];
  readonly handler = (e: StoredEvent<E>): void => {
    this.events.push(e);
    this.waiters = this.waiters.filter((w) => {
      if (this.events.length >= w.n) w.d.resolve();
      return this.events.length < w.n;
    });
  };
  reached(n: number, ms = 10_000): Promise<void> {
    if (this.events.length >= n) return Promise.resolve();
    const d = deferred<void>();
    this.waiters.push({ n, d });
    return within(d.promise, ms, `${n} events (have ${this.events.length})`);
  }
  ids(): string[] {
    return this.events.map((e) => e.event.event_id);
  }
}

export function describeEventLogContract(name: string, factory: () => Promise<ContractSubject>, options: ContractOptions = {}): void {
  const d = options.skip ? describe.skip : describe;
  const slow = options.slowTimeoutMs ?? 60_000;
  const title = options.skip ? `event-log contract: ${name} (skipped: ${options.skip})` : `event-log contract: ${name}`;

  d(title, () => {
    const skips = options.skipTests ?? {};
    const it = (name: string, fn: jest.ProvidesCallback, timeout?: number): void =>
      skips[name] ? globalThis.it.skip(`${name} (skipped: ${skips[name]})`, fn, timeout) : globalThis.it(name, fn, timeout);
    let subject: ContractSubject;
    let log: EventLog<TestEvent>;
    const subs: Subscription[] = [];
    const track = (s: Subscription): Subscription => {
      subs.push(s);
      return s;
    };

    beforeAll(async () => {
      subject = await factory();
      log = subject.log;
    }, 60_000);

    afterEach(async () => {
      await Promise.all(subs.splice(0).map((s) => s.stop()));
    });

    afterAll(async () => {
      await subject?.dispose();
    }, 60_000);

    it('appends and reads the events of a stream in order, with its version', async () => {
      const s = `${category()}-${nextId()}`;
      const first = await log.append(s, [ev('A', 1), ev('B', 2)], 'no_stream');
      expect(first.duplicate).toBe(false);
      const second = await log.append(s, [ev('C', 3)], first.version);
      const third = await log.append(s, [ev('D', 4), ev('E', 5)], second.version);
      const r = await log.read(s);
      expect(r.exists).toBe(true);
      expect(r.events.map((e) => e.event.type)).toEqual(['A', 'B', 'C', 'D', 'E']);
      expect(r.events.map((e) => e.event.data.n)).toEqual([1, 2, 3, 4, 5]);
      expect(r.version).toBe(third.version);
      expect(await log.version(s)).toBe(third.version);
      for (const e of r.events) expect(e.stream).toBe(s);
      expect(r.events[r.events.length - 1].version).toBe(third.version);
      expect(r.events[r.events.length - 1].endOfCommit).toBe(true);
    });

    it('says when a stream does not exist', async () => {
      const s = `${category()}-${nextId()}`;
      const r = await log.read(s);
      expect(r).toEqual({ stream: s, exists: false, version: 'no_stream', events: [] });
      expect(await log.version(s)).toBe('no_stream');
      // The read's version creates the stream: one code path for new and existing aggregates.
      await log.append(s, [ev('A')], r.version);
      expect((await log.read(s)).events).toHaveLength(1);
    });

    it('rejects no_stream on an existing stream with a typed conflict', async () => {
      const s = `${category()}-${nextId()}`;
      const first = await log.append(s, [ev('A')], 'no_stream');
      const err = await log.append(s, [ev('B')], 'no_stream').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConcurrencyError);
      const c = err as ConcurrencyError;
      expect(c.code).toBe('CONFLICT');
      expect(c.type).toBe('CONFLICT');
      expect(c.stream).toBe(s);
      expect(c.expected).toBe('no_stream');
      expect(c.actual).toBe(first.version);
    });

    it('rejects a stale version with a typed conflict and never overwrites', async () => {
      const s = `${category()}-${nextId()}`;
      const v1 = await log.append(s, [ev('A')], 'no_stream');
      const v2 = await log.append(s, [ev('B')], v1.version);
      const err = await log.append(s, [ev('C'), ev('D')], v1.version).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConcurrencyError);
      expect((err as ConcurrencyError).expected).toBe(v1.version);
      expect((err as ConcurrencyError).actual).toBe(v2.version);
      const r = await log.read(s);
      expect(r.events.map((e) => e.event.type)).toEqual(['A', 'B']);
      // A version for a stream that does not exist is a conflict too.
      const missing = `${category()}-${nextId()}`;
      const err2 = await log.append(missing, [ev('A')], v2.version).catch((e: unknown) => e);
      expect(err2).toBeInstanceOf(ConcurrencyError);
      expect((err2 as ConcurrencyError).actual).toBe('no_stream');
    });

    it("appends with 'any' whatever the version", async () => {
      const s = `${category()}-${nextId()}`;
      await log.append(s, [ev('A')], 'any');
      await log.append(s, [ev('B')], 'any');
      expect((await log.read(s)).events.map((e) => e.event.type)).toEqual(['A', 'B']);
    });

    it('lets exactly one of two racing writers with the same expected version win', async () => {
      const cat = category();
      const streams = Array.from({ length: 20 }, () => `${cat}-${nextId()}`);
      await mapConcurrent(streams, 20, async (s) => {
        const base = await log.append(s, [ev('Created')], 'no_stream');
        const outcomes = await Promise.allSettled([
          log.append(s, [ev('ByOne'), ev('ByOneToo')], base.version),
          subject.other.append(s, [ev('ByOther')], base.version),
        ]);
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect(lost[0].reason).toBeInstanceOf(ConcurrencyError);
        const types = (await log.read(s)).events.map((e) => e.event.type);
        expect([
          ['Created', 'ByOne', 'ByOneToo'],
          ['Created', 'ByOther'],
        ]).toContainEqual(types);
      });
      // Two creators racing on a new stream: one wins as well.
      const fresh = `${cat}-${nextId()}`;
      const outcomes = await Promise.allSettled([
        log.append(fresh, [ev('A')], 'no_stream'),
        subject.other.append(fresh, [ev('B')], 'no_stream'),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    });

    it('adds nothing when an append is retried with the same event ids, and returns its version', async () => {
      const s = `${category()}-${nextId()}`;
      const created = await log.append(s, [ev('A')], 'no_stream');
      const batch = [ev('B'), ev('C')];
      const first = await log.append(s, batch, created.version);
      const retry = await log.append(s, batch, created.version);
      expect(retry.duplicate).toBe(true);
      expect(retry.version).toBe(first.version);
      // A single-event retry of the very first append too.
      const again = await log.append(s, [(await log.read(s)).events[0].event], 'no_stream');
      expect(again.duplicate).toBe(true);
      expect(again.version).toBe(created.version);
      // A retry that arrives after a later append is still recognised.
      const later = await log.append(s, [ev('D')], first.version);
      const late = await log.append(s, batch, created.version);
      expect(late.duplicate).toBe(true);
      expect(late.version).toBe(first.version);
      const r = await log.read(s);
      expect(r.events.map((e) => e.event.type)).toEqual(['A', 'B', 'C', 'D']);
      expect(r.version).toBe(later.version);
    });

    it('keeps an append of several events atomic: all or none', async () => {
      const s = `${category()}-${nextId()}`;
      const v = await log.append(s, [ev('A')], 'no_stream');
      await log.append(s, [ev('B')], v.version);
      await expect(log.append(s, [ev('X'), ev('Y'), ev('Z')], v.version)).rejects.toBeInstanceOf(ConcurrencyError);
      const big = [ev('S1'), ev('S2', 0, 'x'.repeat(subject.maxAppendBytes))];
      await expect(log.append(s, big, 'any')).rejects.toBeInstanceOf(EventTooLargeError);
      expect((await log.read(s)).events.map((e) => e.event.type)).toEqual(['A', 'B']);
    });

    it('rejects malformed appends and stream names with typed errors', async () => {
      const s = `${category()}-${nextId()}`;
      await expect(log.append(s, [], 'any')).rejects.toBeInstanceOf(InvalidAppendError);
      await expect(log.append(s, [{ type: 'A' } as unknown as TestEvent], 'any')).rejects.toBeInstanceOf(InvalidAppendError);
      const e = ev('A');
      await expect(log.append(s, [e, e], 'any')).rejects.toBeInstanceOf(InvalidAppendError);
      for (const bad of ['nodash', '-id', 'cat-', 'cat-with.dot', 'cat-a b', 'cat->']) {
        await expect(log.append(bad, [ev('A')], 'any')).rejects.toBeInstanceOf(InvalidStreamNameError);
        await expect(log.read(bad)).rejects.toBeInstanceOf(InvalidStreamNameError);
      }
      expect((await log.read(s)).exists).toBe(false);
    });

    it("hands an append's metadata back with every event of it, on read and subscribe; none when it had none", async () => {
      const cat = category();
      const s = `${cat}-${nextId()}`;
      const traced = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=a' };
      const first = await log.append(s, [ev('A'), ev('B')], 'no_stream', { metadata: traced });
      await log.append(s, [ev('C')], first.version);
      // An 'any' append too (on JetStream it breaks the read chain, so reads scan instead).
      await log.append(s, [ev('D')], 'any', { metadata: { traceparent: '00-11111111111111111111111111111111-2222222222222222-00' } });
      await log.append(s, [ev('E')], 'any');
      const expected = [traced, traced, undefined, { traceparent: '00-11111111111111111111111111111111-2222222222222222-00' }, undefined];
      expect((await log.read(s)).events.map((e) => e.metadata)).toEqual(expected);
      const c = new Collector();
      track(log.subscribe([cat], 'start', c.handler));
      await c.reached(5);
      expect(c.events.map((e) => e.metadata)).toEqual(expected);
      // A retry keeps what the first append stored.
      const retry = await log.append(s, [(await log.read(s)).events[2].event], first.version, {
        metadata: { traceparent: traced.traceparent },
      });
      expect(retry.duplicate).toBe(true);
      expect((await log.read(s)).events[2].metadata).toBeUndefined();
    });

    it('rejects malformed metadata with InvalidAppendError and appends nothing', async () => {
      const s = `${category()}-${nextId()}`;
      for (const metadata of [
        { Traceparent: 'x' },
        { 'bad key': 'x' },
        { traceparent: 'line\nbreak' },
        { traceparent: 'x'.repeat(513) },
        { traceparent: 1 as unknown as string },
        Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])),
      ]) {
        await expect(log.append(s, [ev('A')], 'any', { metadata })).rejects.toBeInstanceOf(InvalidAppendError);
      }
      expect((await log.read(s)).exists).toBe(false);
    });

    it('accepts an event near the size limit and rejects one over it with EventTooLargeError', async () => {
      const s = `${category()}-${nextId()}`;
      const limit = subject.maxAppendBytes;
      const near = ev('Large', 1, 'x'.repeat(limit - 2048));
      const ok = await log.append(s, [near], 'no_stream');
      const r = await log.read(s);
      expect(r.events[0].event.data.pad).toHaveLength(limit - 2048);
      const over = ev('TooLarge', 2, 'x'.repeat(limit + 1));
      const err = await log.append(s, [over], ok.version).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(EventTooLargeError);
      const t = err as EventTooLargeError;
      expect(t.code).toBe('EVENT_TOO_LARGE');
      expect(t.limit).toBe(limit);
      expect(t.size).toBeGreaterThan(limit);
      expect(t.eventId).toBe(over.event_id);
      expect((await log.read(s)).events).toHaveLength(1);
    });

    it('delivers events with stream, increasing positions and versions', async () => {
      const cat = category();
      const a = `${cat}-${nextId()}`;
      const b = `${cat}-${nextId()}`;
      const ra1 = await log.append(a, [ev('A1'), ev('A2')], 'no_stream');
      const rb1 = await log.append(b, [ev('B1')], 'no_stream');
      const ra2 = await log.append(a, [ev('A3')], ra1.version);
      const c = new Collector();
      const sub = track(log.subscribe([cat], 'start', c.handler));
      await within(sub.caughtUp, 10_000, 'catch-up');
      expect(c.events.map((e) => e.event.type)).toEqual(['A1', 'A2', 'B1', 'A3']);
      expect(c.events.map((e) => e.stream)).toEqual([a, a, b, a]);
      expect(c.events.every((e) => e.category === cat)).toBe(true);
      const positions = c.events.map((e) => e.position);
      expect([...positions].sort()).toEqual(positions);
      expect(new Set(positions).size).toBe(positions.length);
      // The version at the end of each commit is what append returned: a cache may trust it.
      for (const r of [ra1, rb1, ra2]) {
        const last = c.events.find((e) => e.position === r.position);
        expect(last?.version).toBe(r.version);
        expect(last?.endOfCommit).toBe(true);
      }
      expect(c.events[3].position).toBe(ra2.position);
    });

    it("gives each event the version before it: 'no_stream' first, then each commit continues from the last", async () => {
      // Given a stream written in commits of one and of several events.
      const cat = category();
      const s = `${cat}-${nextId()}`;
      const commits = [[ev('A')], [ev('B'), ev('C')], [ev('D')], [ev('E'), ev('F'), ev('G')]];
      const results: AppendResult[] = [];
      let version: ExpectedVersion = 'no_stream';
      for (const events of commits) {
        const r = await log.append(s, events, version);
        results.push(r);
        version = r.version;
      }
      // When it is read and subscribed to.
      const read = await log.read(s);
      const c = new Collector();
      const sub = track(log.subscribe([cat], 'start', c.handler));
      await within(sub.caughtUp, 10_000, 'catch-up');
      // Then both chain: a cache holding a commit's `previous` may fold it, so no event can be skipped.
      for (const [how, events] of [
        ['read', read.events],
        ['subscribe', c.events],
      ] as const) {
        expect({ how, types: events.map((e) => e.event.type) }).toEqual({ how, types: ['A', 'B', 'C', 'D', 'E', 'F', 'G'] });
        let at = 0;
        commits.forEach((commit, i) => {
          const inCommit = events.slice(at, at + commit.length);
          at += commit.length;
          const before = i === 0 ? 'no_stream' : results[i - 1].version;
          expect({ how, commit: i, previous: inCommit[0].previous }).toEqual({ how, commit: i, previous: before });
          // Inside a commit: per-event versions chain one by one; a commit stored as one record
          // (JetStream) gives all its events the commit's `previous` and `version`.
          for (let k = 1; k < inCommit.length; k++) {
            const [prev, e] = [inCommit[k - 1], inCommit[k]];
            const chained = e.previous === prev.version;
            const shared = e.previous === prev.previous && e.version === prev.version;
            expect({ how, commit: i, event: k, chainedOrShared: chained || shared }).toEqual({
              how,
              commit: i,
              event: k,
              chainedOrShared: true,
            });
          }
          expect(inCommit[inCommit.length - 1].version).toBe(results[i].version);
        });
      }
    });

    it('catches up, says so, then follows live', async () => {
      const cat = category();
      const streams = Array.from({ length: 5 }, () => `${cat}-${nextId()}`);
      for (const s of streams) await log.append(s, [ev('Old', 1), ev('Old', 2)], 'no_stream');
      const c = new Collector();
      const sub = track(log.subscribe([cat], 'start', c.handler));
      await within(sub.caughtUp, 10_000, 'catch-up');
      expect(c.events).toHaveLength(10);
      const live = `${cat}-${nextId()}`;
      await log.append(live, [ev('New', 3)], 'no_stream');
      await log.append(streams[0], [ev('New', 4)], 'any');
      await c.reached(12);
      expect(c.events.slice(10).map((e) => e.event.data.n)).toEqual([3, 4]);
    });

    it('signals caught-up at once for an empty category, and for a subscription from the head', async () => {
      const c = new Collector();
      const sub = track(log.subscribe([category()], 'start', c.handler));
      await within(sub.caughtUp, 10_000, 'catch-up of an empty category');
      const cat = category();
      await log.append(`${cat}-${nextId()}`, [ev('Before')], 'no_stream');
      const head = await log.head();
      const c2 = new Collector();
      const sub2 = track(log.subscribe([cat], head, c2.handler));
      await within(sub2.caughtUp, 10_000, 'catch-up from head');
      await log.append(`${cat}-${nextId()}`, [ev('After')], 'no_stream');
      await c2.reached(1);
      expect(c2.events.map((e) => e.event.type)).toEqual(['After']);
    });

    it('filters by exact category, in one global order across categories', async () => {
      const base = category();
      const other = category();
      const sub1 = `${base}-run`; // like council vs council-run
      const order: string[] = [];
      for (let i = 0; i < 6; i++) {
        const cat = [base, sub1, other][i % 3];
        const r = await log.append(`${cat}-${nextId()}`, [ev(`${cat}:${i}`)], 'no_stream');
        order.push(`${cat}:${i}@${r.position}`);
      }
      const only = new Collector();
      const s1 = track(log.subscribe([base], 'start', only.handler));
      const both = new Collector();
      const s2 = track(log.subscribe([base, other], 'start', both.handler));
      await within(Promise.all([s1.caughtUp, s2.caughtUp]), 10_000, 'catch-up');
      expect(only.events.map((e) => e.event.type)).toEqual([`${base}:0`, `${base}:3`]);
      expect(both.events.map((e) => e.event.type)).toEqual([`${base}:0`, `${other}:2`, `${base}:3`, `${other}:5`]);
      expect(only.events.every((e) => e.category === base)).toBe(true);
    });

    it('resumes a killed subscriber from its checkpoint: no event lost, none applied twice', async () => {
      const cat = category();
      const streams = Array.from({ length: 8 }, () => `${cat}-${nextId()}`);
      let n = 0;
      for (let round = 0; round < 4; round++) {
        for (const s of streams) {
          const batch = round % 2 === 0 ? [ev('E', n++)] : [ev('E', n++), ev('E', n++), ev('E', n++)];
          await log.append(s, batch, 'any');
        }
      }
      const total = n;
      // The consumer's durable state: what it applied and its checkpoint, written together.
      const applied: number[] = [];
      let checkpoint: StartFrom = 'start';
      const apply = (e: StoredEvent<TestEvent>): void => {
        applied.push(e.event.data.n as number);
        checkpoint = e.position;
      };
      // First run crashes inside its handler after 17 events.
      let seen = 0;
      const crash = new Error('killed');
      const first = log.subscribe([cat], 'start', (e) => {
        if (++seen > 17) throw crash;
        apply(e);
      });
      await expect(within(first.closed, 10_000, 'crash')).rejects.toBe(crash);
      expect(applied).toHaveLength(17);
      // Second run resumes from the checkpoint, is stopped mid-way, third run finishes; live events arrive meanwhile.
      const stopAt = 40;
      const stopped = deferred<void>();
      const second = log.subscribe([cat], checkpoint, (e) => {
        if (applied.length >= stopAt) {
          stopped.resolve();
          return;
        }
        apply(e);
      });
      await within(stopped.promise, 10_000, 'second run');
      await second.stop();
      for (const s of streams.slice(0, 3)) await log.append(s, [ev('E', n++)], 'any');
      const done = deferred<void>();
      const third = track(
        log.subscribe([cat], checkpoint as Position, (e) => {
          apply(e);
          if (applied.length === n) done.resolve();
        }),
      );
      await within(third.caughtUp, 10_000, 'third catch-up');
      await within(done.promise, 10_000, `all ${n} events (have ${applied.length})`);
      expect(n).toBe(total + 3);
      expect([...applied].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
    });

    it(
      'handles 10,000 streams appended concurrently',
      async () => {
        const cat = category();
        const streams = Array.from({ length: 10_000 }, () => `${cat}-${nextId()}`);
        const results = await mapConcurrent(streams, 256, (s, i) => log.append(s, [ev('Created', i)], 'no_stream'));
        expect(results.every((r) => !r.duplicate)).toBe(true);
        const sample = [0, 1, 4999, 9998, 9999];
        for (const i of sample) {
          const r = await log.read(streams[i]);
          expect(r.events.map((e) => e.event.data.n)).toEqual([i]);
          expect(r.version).toBe(results[i].version);
        }
        const c = new Collector();
        const sub = track(log.subscribe([cat], 'start', c.handler));
        await within(sub.caughtUp, slow, 'catch-up of 10,000 streams');
        expect(c.events).toHaveLength(10_000);
        expect(new Set(c.events.map((e) => e.stream)).size).toBe(10_000);
      },
      slow,
    );
  });
}
