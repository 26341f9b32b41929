/** What the contract does not cover: JetStream specifics, the KV checkpoint store, the cache on NATS. */
import { connect, headers, type NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { AggregateCache } from '../cache/aggregate-cache';
import { CorruptRecordError, EventLogConfigError, LogUnavailableError } from '../core/errors';
import { describeCheckpointStore, type Seen } from '../testing/checkpoint-store.contract';
import { Collector, within, type TestEvent } from '../testing/event-log.contract';
import { NATS_URL, openTestLog } from '../testing/nats-test-log';
import { JetStreamEventLog, type JetStreamEventLogOptions } from './jetstream-event-log';
import { KvCheckpointStore } from './kv-checkpoint-store';
import { NatsFaultProxy } from '../testing/nats-fault-proxy';

const ev = (type = 'E'): TestEvent => ({ event_id: ulid(), type, data: {} });

describe('JetStreamEventLog specifics', () => {
  let t: Awaited<ReturnType<typeof openTestLog>>;
  beforeAll(async () => {
    // Reads check their chains as on a replicated stream, to see the fork below on one node.
    t = await openTestLog({ readChainLimit: 3, checkChains: true });
  });
  afterAll(async () => {
    await t.dispose();
  });

  it('given appends that never stop, when a subscription starts, then it is caught up once it handled what existed at its start', async () => {
    for (let i = 0; i < 300; i++) await t.log.append(`busy-${ulid()}`, [ev('Before')], 'no_stream');
    let writing = true;
    const writer = (async () => {
      while (writing) await t.log.append(`busy-${ulid()}`, [ev('During')], 'no_stream');
    })();
    try {
      let before = 0;
      // A slow handler, so that messages are always pending while the writer runs.
      const sub = t.log.subscribe(['busy'], 'start', async (e) => {
        if (e.event.type === 'Before') before++;
        await new Promise((r) => setTimeout(r, 1));
      });
      await within(sub.caughtUp, 20_000, 'caught up under a steady stream of appends');
      expect(before).toBe(300);
      await sub.stop();
    } finally {
      writing = false;
      await writer;
    }
  });

  it('given a server that over-counts what is pending, when a subscription catches up from the middle of a category, then it is caught up once delivery ends', async () => {
    // Given: 40 events of the category, and others, on the real server.
    const events: string[] = [];
    for (let i = 0; i < 40; i++) {
      events.push((await t.log.append(`counted-${ulid()}`, [ev('Counted')], 'no_stream')).position);
      await t.log.append(`other-${ulid()}`, [ev('Other')], 'no_stream');
    }
    const [host, port] = NATS_URL.replace(/^nats:\/\//, '').split(':');
    const proxy = new NatsFaultProxy({ host, port: Number(port) }, { overcount: 8 });
    await proxy.start();
    const nc = await connect({ servers: proxy.url, name: 'over-counted' });
    const options = (t.log as unknown as { options: JetStreamEventLogOptions }).options;
    const seen = await JetStreamEventLog.create<TestEvent>({ ...options, connection: nc, stallMs: 1_500 });
    try {
      // When: it subscribes after the 10th event, through a server that says 8 more are pending than there are.
      const handled: string[] = [];
      const sub = seen.subscribe(['counted'], events[9], (e) => {
        handled.push(e.position);
      });
      // Then: it is caught up with the 30 that follow, not waiting for 8 that never come.
      await within(sub.caughtUp, 15_000, 'catch-up through an over-counting server');
      expect(handled).toEqual(events.slice(10));
      await sub.stop();
    } finally {
      await seen.close();
      await nc.close();
      await proxy.stop();
    }
  }, 30_000);

  describe('a consumer that stops delivering without a word', () => {
    let proxy: NatsFaultProxy;
    let nc: NatsConnection;
    let quiet: JetStreamEventLog<TestEvent>;
    beforeEach(async () => {
      const [host, port] = NATS_URL.replace(/^nats:\/\//, '').split(':');
      proxy = new NatsFaultProxy({ host, port: Number(port) });
      await proxy.start();
      nc = await connect({ servers: proxy.url, name: 'silenced' });
      const options = (t.log as unknown as { options: JetStreamEventLogOptions }).options;
      quiet = await JetStreamEventLog.create<TestEvent>({ ...options, connection: nc, stallMs: 1_500 });
    });
    afterEach(async () => {
      await quiet.close();
      await nc.close();
      await proxy.stop();
    });

    it('given a subscription following a category, when the server goes silent with events pending, then the subscription ends as unavailable and one resumed from its last event gets the rest, each once', async () => {
      // Given: a follower caught up with 5 events.
      const category = `hush${ulid().slice(-8).toLowerCase()}`;
      const appended: string[] = [];
      const more = async (n: number) => {
        for (let i = 0; i < n; i++) appended.push((await t.log.append(`${category}-${ulid()}`, [ev('Said')], 'no_stream')).position);
      };
      await more(5);
      const handled: string[] = [];
      const sub = quiet.subscribe([category], 'start', (e) => void handled.push(e.position));
      await within(sub.caughtUp, 10_000, 'the first catch-up');

      // When: deliveries and heartbeats stop while 5 more events are appended.
      proxy.silent = true;
      await more(5);

      // Then: the subscription says it is unavailable instead of waiting for ever...
      await expect(within(sub.closed, 15_000, 'the silent subscription to end')).rejects.toBeInstanceOf(LogUnavailableError);
      expect(handled).toEqual(appended.slice(0, 5));
      // ...and a reader that resumes after its last event gets the other 5, once each.
      proxy.silent = false;
      const resumed = quiet.subscribe([category], handled[handled.length - 1], (e) => void handled.push(e.position));
      await within(resumed.caughtUp, 10_000, 'the resumed catch-up');
      expect(handled).toEqual(appended);
      await resumed.stop();
    }, 40_000);

    it('given a server that delivers nothing, when a subscription catches up a category with events, then the catch-up fails as unavailable instead of waiting for ever', async () => {
      const category = `mute${ulid().slice(-8).toLowerCase()}`;
      for (let i = 0; i < 3; i++) await t.log.append(`${category}-${ulid()}`, [ev('Said')], 'no_stream');
      proxy.silent = true;
      const handled: string[] = [];
      const sub = quiet.subscribe([category], 'start', (e) => void handled.push(e.position));
      await expect(within(sub.caughtUp, 15_000, 'the catch-up to fail')).rejects.toBeInstanceOf(LogUnavailableError);
      expect(handled).toEqual([]);
    }, 30_000);

    it('given an aggregate read by its filtered scan (a chain longer than the walk), when the server delivers nothing, then the read fails as unavailable within a request timeout, and reads it whole once deliveries come back', async () => {
      // Given: five commits, more than this log's chain walk of 3, so a read scans the subject.
      const options = (t.log as unknown as { options: JetStreamEventLogOptions }).options;
      const reader = await JetStreamEventLog.create<TestEvent>({ ...options, connection: nc, requestTimeoutMs: 1_500 });
      const stream = `scan-${ulid()}`;
      const ids: string[] = [];
      let version: string | 'no_stream' = 'no_stream';
      for (let i = 0; i < 5; i++) {
        const e = ev('Said');
        ids.push(e.event_id);
        version = (await t.log.append(stream, [e], version as never)).version;
      }
      try {
        // When: deliveries and heartbeats stop (API requests still answered).
        proxy.silent = true;
        // Then: the read says the log is unavailable instead of waiting for ever...
        await expect(within(reader.read(stream), 10_000, 'the silent scan to end')).rejects.toBeInstanceOf(LogUnavailableError);
        // ...and reads every commit once the server delivers again.
        proxy.silent = false;
        expect((await reader.read(stream)).events.map((e) => e.event.event_id)).toEqual(ids);
      } finally {
        await reader.close();
      }
    }, 30_000);
  });

  it("given a message on the log's subjects that the log did not append (a consumer delivering into them), when readers fold the aggregate and the category, then it is skipped and reported, and the aggregate goes on", async () => {
    const foreign: string[] = [];
    const options = (t.log as unknown as { options: JetStreamEventLogOptions }).options;
    const reader = await JetStreamEventLog.create<TestEvent>({
      ...options,
      connection: t.connections[1],
      onForeignRecord: (r) => foreign.push(r),
    });
    const stream = `proposal-${ulid()}`;
    // Given: a commit, then what a push consumer with a deliver subject inside the log puts there
    // (another stream's message, with its own headers), then an append on the version it left.
    const v1 = (await t.log.append(stream, [ev('A')], 'no_stream')).version;
    const h = headers();
    h.set('Nats-Msg-Id', 'decision-of-something');
    const delivered = await t.connections[0]
      .jetstream()
      .publish(t.log.subjectOf(stream), new TextEncoder().encode('{"proposal_id":"x","status":"accepted"}'), { headers: h });
    const version = await reader.version(stream);
    expect(version).toBe(String(delivered.seq));
    await t.log.append(stream, [ev('B')], version);

    // When: the aggregate is read, and its category followed from the start.
    const read = await reader.read(stream);
    const seen: string[] = [];
    const sub = reader.subscribe(['proposal'], 'start', (e) => {
      if (e.stream === stream) seen.push(e.event.type);
    });
    await within(sub.caughtUp, 10_000, 'catch-up past a foreign message');
    await sub.stop();
    await reader.close();

    // Then: only the commits are folded, and the foreign message is reported, not fatal.
    expect(read.events.map((e) => e.event.type)).toEqual(['A', 'B']);
    expect(v1).not.toBe(String(delivered.seq));
    expect(seen).toEqual(['A', 'B']);
    expect(foreign).toEqual(expect.arrayContaining([`${options.streamName}#${delivered.seq}`]));
  });

  it("given a message marked as this log's commit that does not decode, when a reader folds it, then it is corruption: CorruptRecordError", async () => {
    const stream = `proposal-${ulid()}`;
    const h = headers();
    h.set('Conclave-Commit', '1');
    await t.connections[0].jetstream().publish(t.log.subjectOf(stream), new TextEncoder().encode('not json'), { headers: h });
    await expect(t.log.read(stream)).rejects.toBeInstanceOf(CorruptRecordError);
  });

  it("keeps an append's metadata in its commit envelope, and still reads the headers of a commit stored before the envelope held it", async () => {
    const stream = `proposal-${ulid()}`;
    const traceparent = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;
    // Given: a commit as an older version of the log stored it, its metadata in headers.
    const h = headers();
    h.set('Conclave-Commit', '1');
    h.set('Conclave-Prev-Seq', '0');
    h.set('Conclave-Meta-traceparent', traceparent);
    const old = await t.connections[0]
      .jetstream()
      .publish(t.log.subjectOf(stream), new TextEncoder().encode(JSON.stringify({ v: 1, events: [ev('Old')] })), { headers: h });
    // When: the current log appends after it, with metadata.
    const { version } = await t.log.append(stream, [ev('New')], String(old.seq), { metadata: { traceparent, tracestate: 'a=1' } });

    // Then: both commits read back with their metadata, the new one from its envelope.
    const read = await t.log.read(stream);
    expect(read.events.map((e) => [e.event.type, e.metadata])).toEqual([
      ['Old', { traceparent }],
      ['New', { traceparent, tracestate: 'a=1' }],
    ]);
    const stored = await t.connections[0]
      .jetstreamManager()
      .then((jsm) => jsm.streams.getMessage(t.log.streamName, { seq: Number(version) }));
    expect(JSON.parse(new TextDecoder().decode(stored.data)).meta).toEqual({ traceparent, tracestate: 'a=1' });
    expect(stored.header.keys().filter((k) => k.startsWith('Conclave-Meta-'))).toEqual([]);
  });

  it("given a commit of this log whose envelope's meta is not an object of strings, when a reader folds it, then it is corruption", async () => {
    const stream = `proposal-${ulid()}`;
    const h = headers();
    h.set('Conclave-Commit', '1');
    const body = JSON.stringify({ v: 1, events: [ev('A')], meta: { traceparent: 7 } });
    await t.connections[0].jetstream().publish(t.log.subjectOf(stream), new TextEncoder().encode(body), { headers: h });
    await expect(t.log.read(stream)).rejects.toBeInstanceOf(CorruptRecordError);
  });

  it('reads that decide (version, read) go to the stream leader, never to a direct get that a lagging replica may serve', async () => {
    const stream = `proposal-${ulid()}`;
    const v = (await t.log.append(stream, [ev('A')], 'no_stream')).version;
    await t.log.append(stream, [ev('B')], v);
    const jsm = (t.log as unknown as { jsm: { direct: { getMessage: (...a: unknown[]) => unknown } } }).jsm;
    const direct = jest.spyOn(jsm.direct, 'getMessage');
    await t.log.version(stream);
    await t.log.read(stream);
    expect(direct).not.toHaveBeenCalled();
    direct.mockRestore();
  });

  it('reads by walking the commit chain, and by a filtered scan when an append used any or the chain is long', async () => {
    const chained = `proposal-${ulid()}`;
    let v = (await t.log.append(chained, [ev('A')], 'no_stream')).version;
    v = (await t.log.append(chained, [ev('B'), ev('C')], v)).version;
    expect((await t.log.read(chained)).events.map((e) => e.event.type)).toEqual(['A', 'B', 'C']);
    // Longer than readChainLimit (3): scanned.
    for (const type of ['D', 'E', 'F']) v = (await t.log.append(chained, [ev(type)], v)).version;
    expect((await t.log.read(chained)).events.map((e) => e.event.type)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
    // 'any' breaks the chain: scanned too.
    const loose = `proposal-${ulid()}`;
    await t.log.append(loose, [ev('A')], 'any');
    await t.log.append(loose, [ev('B')], 'any');
    const r = await t.log.read(loose);
    expect(r.events.map((e) => e.event.type)).toEqual(['A', 'B']);
    expect(r.events.map((e) => e.endOfCommit)).toEqual([true, true]);
  });

  it('given two commits stored after the same predecessor (a stale expected sequence the server let in), when the aggregate is read, then both are in it, in log order, as a subscription delivers them', async () => {
    // Given: A, then B appended after A, then C stored after A as well, as a clustered 2.9 server
    // admits during a leader election (written here without the expected-sequence check)
    // A category of its own: others here hold commits made corrupt on purpose.
    const stream = `forked-${ulid()}`;
    const a = (await t.log.append(stream, [ev('A')], 'no_stream')).version;
    await t.log.append(stream, [ev('B')], a);
    const h = headers();
    h.set('Conclave-Commit', '1');
    h.set('Conclave-Prev-Seq', a);
    await t.connections[0]
      .jetstream()
      .publish(t.log.subjectOf(stream), new TextEncoder().encode(JSON.stringify({ v: 1, events: [ev('C')] })), { headers: h });

    // When it is read, and when the category is followed
    const read = await t.log.read(stream);
    const seen = new Collector();
    const sub = t.log.subscribe(['forked'], 'start', seen.handler);
    await sub.caughtUp;
    await sub.stop();

    // Then both see A, B and C
    expect(read.events.map((e) => e.event.type)).toEqual(['A', 'B', 'C']);
    expect(seen.events.filter((e) => e.stream === stream).map((e) => e.event.type)).toEqual(['A', 'B', 'C']);
  });

  it('marks every event of a multi-event commit but the last as not the end of its commit', async () => {
    const s = `proposal-${ulid()}`;
    await t.log.append(s, [ev('A'), ev('B'), ev('C')], 'no_stream');
    const r = await t.log.read(s);
    expect(r.events.map((e) => e.endOfCommit)).toEqual([false, false, true]);
    expect(new Set(r.events.map((e) => e.version)).size).toBe(1);
  });

  it('refuses a size limit the server cannot carry', async () => {
    await expect(
      JetStreamEventLog.create({
        connection: t.connections[0],
        streamName: t.log.streamName,
        subjectPrefix: t.log.subjectPrefix,
        maxAppendBytes: 64 * 1024 * 1024,
      }),
    ).rejects.toBeInstanceOf(EventLogConfigError);
    await expect(
      JetStreamEventLog.create({ connection: t.connections[0], streamName: t.log.streamName, subjectPrefix: 'elsewhere' }),
    ).rejects.toBeInstanceOf(EventLogConfigError);
  });

  it('reports a closed connection as LogUnavailableError with the cause', async () => {
    const nc = await connect({ servers: NATS_URL });
    const log = await JetStreamEventLog.create<TestEvent>({
      connection: nc,
      streamName: t.log.streamName,
      subjectPrefix: t.log.subjectPrefix,
    });
    await nc.close();
    const err = await log.append(`proposal-${ulid()}`, [ev()], 'any').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LogUnavailableError);
    expect((err as LogUnavailableError).cause).toBeDefined();
    await expect(log.version(`proposal-${ulid()}`)).rejects.toBeInstanceOf(LogUnavailableError);
  });

  it('keeps an AggregateCache fresh across two processes', async () => {
    type N = { n: number };
    const opts = { categories: ['proposal'], initial: (): N => ({ n: 0 }), evolve: (s: N): N => ({ n: s.n + 1 }) };
    const mine = new AggregateCache<N, TestEvent>(t.log, opts);
    await mine.start();
    const s = `proposal-${ulid()}`;
    const loaded = await mine.load(s);
    const appended = await mine.append(s, [ev(), ev()], loaded.version);
    expect(await mine.load(s)).toMatchObject({ cached: true, version: appended.version, state: { n: 2 } });
    // Another process appends: the feed brings it in; until then load() falls back, never stale.
    const seen = new Collector();
    const probe = t.log.subscribe(['proposal'], appended.position, seen.handler);
    await t.other.append(s, [ev(), ev(), ev()], appended.version);
    await seen.reached(3);
    const after = await mine.load(s);
    expect(after.state.n).toBe(5);
    expect(after.version).toBe(await t.log.version(s));
    await probe.stop();
    await mine.stop();
  });
});

describe('KvCheckpointStore', () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
  });
  afterAll(async () => {
    await nc.close();
  });

  describeCheckpointStore('KvCheckpointStore (NATS)', async () => {
    const store = await KvCheckpointStore.create<Seen>({ connection: nc, bucket: `TEST_CKPT_${ulid()}` });
    return { store, dispose: () => store.destroy() };
  });
});
