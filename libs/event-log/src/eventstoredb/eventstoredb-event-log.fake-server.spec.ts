/**
 * The EventStoreDB adapter against a scripted server: the real client's `Subscription` and
 * `ReadStream` (so its buffering, signals and error mapping are the real ones) fed with real
 * protobuf `ReadResp` messages by a fake gRPC call; only the server's answers are scripted.
 */
import {
  AccessDeniedError,
  WrongExpectedVersionError,
  type AppendResult as EsdbAppendResult,
  type AppendToStreamOptions,
  type EventStoreDBClient,
  type Filter,
  type JSONEventData,
  type ReadAllOptions,
  type ReadStreamOptions,
  type SubscribeToAllOptions,
} from '@eventstore/db-client';
import { ReadStream } from '@eventstore/db-client/dist/streams/utils/ReadStream';
import { Subscription as ClientSubscription } from '@eventstore/db-client/dist/streams/utils/Subscription';
import { convertGrpcEvent } from '@eventstore/db-client/dist/utils';
import { StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb';
import { ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { Metadata, status, type ClientReadableStream } from '@grpc/grpc-js';
import { Readable } from 'node:stream';
import { ulid } from 'ulid';
import { EventLogConfigError, LogUnavailableError } from '../core/errors';
import type { StoredEvent } from '../core/types';
import { within, type TestEvent } from '../testing/event-log.contract';
import { eventIdToUuid } from './event-id-uuid';
import { EventStoreDbEventLog } from './eventstoredb-event-log';

interface FakeRecord {
  streamId: string;
  revision: bigint;
  id: string;
  type: string;
  data: unknown;
  position: bigint;
}

/**
 * What grpc-js does with a server-streaming call: `push(null)` when the status arrives, then an
 * 'error' event when it is not OK; `cancel()` ends it with CANCELLED "Cancelled on client".
 */
class FakeCall extends Readable {
  ended = false;
  constructor() {
    super({ objectMode: true });
  }
  override _read(): void {
    // Responses are pushed by the scripted server.
  }
  send(resp: ReadResp): void {
    this.push(resp);
  }
  finish(error?: { code: number; details: string; exception?: string }): void {
    this.ended = true;
    // The status arrives from the network: after the caller attached its listeners.
    setImmediate(() => {
      this.push(null);
      if (!error) return;
      const metadata = new Metadata();
      if (error.exception) metadata.set('exception', error.exception);
      this.emit('error', Object.assign(new Error(`${error.code} ${error.details}`), { ...error, metadata }));
    });
  }
  cancel(): void {
    this.finish({ code: status.CANCELLED, details: 'Cancelled on client' });
  }
}

const ACCESS_DENIED = { code: status.PERMISSION_DENIED, details: 'Access Denied', exception: 'access-denied' };

function eventResp(r: FakeRecord): ReadResp {
  const recorded = new ReadResp.ReadEvent.RecordedEvent();
  recorded.setId(new UUID().setString(r.id));
  recorded.setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(r.streamId)));
  recorded.setStreamRevision(r.revision.toString());
  recorded.setCommitPosition(r.position.toString());
  recorded.setPreparePosition(r.position.toString());
  recorded.getMetadataMap().set('type', r.type);
  recorded.getMetadataMap().set('content-type', 'application/json');
  recorded.getMetadataMap().set('created', '638000000000000000');
  recorded.setData(Buffer.from(JSON.stringify(r.data)));
  const event = new ReadResp.ReadEvent().setEvent(recorded);
  event.setCommitPosition(r.position.toString());
  return new ReadResp().setEvent(event);
}

function signalResp(kind: 'caughtUp' | 'checkpoint', position?: bigint): ReadResp {
  if (kind === 'caughtUp') return new ReadResp().setCaughtUp(new ReadResp.CaughtUp());
  const checkpoint = new ReadResp.Checkpoint();
  checkpoint.setCommitPosition(String(position));
  checkpoint.setPreparePosition(String(position));
  return new ReadResp().setCheckpoint(checkpoint);
}

function passes(filter: Filter | undefined, r: FakeRecord): boolean {
  if (!filter) return true;
  const field = filter.filterOn === 'streamName' ? r.streamId : r.type;
  return 'prefixes' in filter ? filter.prefixes.some((p) => field.startsWith(p)) : new RegExp(filter.regex).test(field);
}

interface ServerBehaviour {
  /** 23.10+ sends a caught-up message when a subscription turns live. */
  readonly caughtUpSignal: boolean;
  /** Older servers acknowledge an idempotent write without a position. */
  readonly positionOnDuplicate: boolean;
  /** Access to $all: only admins by default. */
  readonly allDenied?: boolean;
}

/** A scripted single-node server behind the client's methods the adapter calls. */
class FakeServer {
  readonly log: FakeRecord[] = [];
  readonly subscriptions: { call: FakeCall; filter?: Filter }[] = [];
  /** Records deleted after a subscription started, before the server's reader reached them. */
  readonly undeliverable = new Set<FakeRecord>();
  private next = 1000n;

  constructor(private readonly behaviour: ServerBehaviour) {}

  record(streamId: string, type: string, data: unknown, id = eventIdToUuid(ulid())): FakeRecord {
    const revision = BigInt(this.log.filter((r) => r.streamId === streamId).length);
    const r = { streamId, revision, id, type, data, position: (this.next += 100n) };
    this.log.push(r);
    for (const s of this.subscriptions) if (!s.call.ended && passes(s.filter, r)) s.call.send(eventResp(r));
    return r;
  }

  client(): EventStoreDBClient {
    const readStreamOf = (call: FakeCall): ReadStream<never> =>
      new ReadStream(() => Promise.resolve(call as unknown as ClientReadableStream<ReadResp>), convertGrpcEvent, {});
    const fake = {
      appendToStream: async (
        streamId: string,
        events: JSONEventData[],
        { expectedRevision = 'any' }: AppendToStreamOptions,
      ): Promise<EsdbAppendResult> => this.append(streamId, events, expectedRevision),
      readStream: (streamId: string, { direction, fromRevision, maxCount }: ReadStreamOptions) => {
        const call = new FakeCall();
        let records = this.log.filter((r) => r.streamId === streamId);
        if (records.length === 0) {
          const notFound = new ReadResp.StreamNotFound();
          notFound.setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(streamId)));
          call.send(new ReadResp().setStreamNotFound(notFound));
        } else {
          if (direction === 'backwards') records = [...records].reverse();
          if (typeof fromRevision === 'bigint') {
            records = records.filter((r) => (direction === 'backwards' ? r.revision <= fromRevision : r.revision >= fromRevision));
          }
          for (const r of records.slice(0, Number(maxCount ?? records.length))) call.send(eventResp(r));
        }
        call.finish();
        return readStreamOf(call);
      },
      readAll: ({ direction, maxCount }: ReadAllOptions) => {
        const call = new FakeCall();
        if (this.behaviour.allDenied) {
          call.finish(ACCESS_DENIED);
          return readStreamOf(call);
        }
        const records = direction === 'backwards' ? [...this.log].reverse() : this.log;
        for (const r of records.slice(0, Number(maxCount ?? records.length))) call.send(eventResp(r));
        call.finish();
        return readStreamOf(call);
      },
      subscribeToAll: ({ fromPosition, filter }: SubscribeToAllOptions) => {
        const call = new FakeCall();
        this.subscriptions.push({ call, filter });
        const sub = new ClientSubscription(
          () => Promise.resolve(call as unknown as ClientReadableStream<ReadResp>),
          convertGrpcEvent,
          {},
          filter?.checkpointReached,
        );
        call.send(new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId('s')));
        if (this.behaviour.allDenied) {
          call.finish(ACCESS_DENIED);
          return sub;
        }
        const after = typeof fromPosition === 'object' ? fromPosition.commit : -1n;
        for (const r of this.log) {
          if (r.position > after && passes(filter, r) && !this.undeliverable.has(r)) call.send(eventResp(r));
        }
        if (this.behaviour.caughtUpSignal) call.send(signalResp('caughtUp'));
        return sub;
      },
      dispose: async () => undefined,
    };
    return fake as unknown as EventStoreDBClient;
  }

  private append(streamId: string, events: JSONEventData[], expected: unknown): EsdbAppendResult {
    const existing = this.log.filter((r) => r.streamId === streamId);
    const current = BigInt(existing.length) - 1n;
    const ids = events.map((e) => String(e.id));
    // The server's idempotency check: the same ids where the retry says they belong (or anywhere
    // for 'any') acknowledge the original write.
    const from = typeof expected === 'bigint' ? expected + 1n : expected === 'no_stream' ? 0n : undefined;
    const original =
      from !== undefined ? existing.slice(Number(from), Number(from) + ids.length) : existing.filter((r) => ids.includes(r.id));
    if (original.length === ids.length && original.every((r, i) => r.id === ids[i])) {
      const last = original[original.length - 1];
      return {
        success: true,
        nextExpectedRevision: last.revision,
        position: this.behaviour.positionOnDuplicate ? { commit: last.position, prepare: last.position } : undefined,
      };
    }
    const ok = expected === 'any' || (expected === 'no_stream' ? current === -1n : expected === current);
    if (!ok) {
      throw new WrongExpectedVersionError(undefined, {
        streamName: streamId,
        current: current === -1n ? 'no_stream' : current,
        expected: expected as bigint,
      });
    }
    const written = events.map((e) => this.record(streamId, e.type, e.data, String(e.id)));
    // The position of the write, which is its first record's: not the last event's for several.
    const first = written[0].position;
    return { success: true, nextExpectedRevision: written[written.length - 1].revision, position: { commit: first, prepare: first } };
  }
}

const ev = (type = 'E'): TestEvent => ({ event_id: ulid(), type, data: {} });
const cat = (): string => `c${ulid().toLowerCase()}`;

/** A handler that holds every event until released, recording what it finished. */
function gatedHandler(): { handler: (e: StoredEvent<TestEvent>) => Promise<void>; finished: string[]; release(): void } {
  const finished: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return {
    finished,
    release: () => open(),
    handler: async (e) => {
      await gate;
      finished.push(e.event.type);
    },
  };
}

/** Lets the client's streams and the adapter's loop run: several macrotask turns. */
const settleIo = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

function setup(behaviour: ServerBehaviour): { server: FakeServer; log: EventStoreDbEventLog<TestEvent> } {
  const server = new FakeServer(behaviour);
  return { server, log: new EventStoreDbEventLog<TestEvent>({ client: server.client() }) };
}

const OLD = { caughtUpSignal: false, positionOnDuplicate: false } as const;
const NEW = { caughtUpSignal: true, positionOnDuplicate: true } as const;

describe('EventStoreDbEventLog against a scripted server', () => {
  describe('caught-up', () => {
    it('resolves when the last matching event is handled, though $all ends with a system event (server without the signal)', async () => {
      // Given matching events, then a system record the category filter never delivers, at the end of $all.
      const { server, log } = setup(OLD);
      const c = cat();
      server.record(`${c}-a`, 'One', ev('One'));
      server.record(`other-b`, 'Other', ev('Other'));
      server.record(`${c}-a`, 'Two', ev('Two'));
      server.record('$stats-127.0.0.1:2113', '$statsCollected', {});
      // When a subscription catches up.
      const seen: string[] = [];
      const sub = log.subscribe([c], 'start', (e) => {
        seen.push(e.event.type);
      });
      // Then it is caught up once both matching events were handled.
      await within(sub.caughtUp, 2_000, 'caught-up');
      expect(seen).toEqual(['One', 'Two']);
      await sub.stop();
    });

    it('resolves at once when nothing matching exists after the checkpoint (server without the signal)', async () => {
      // Given a category whose events all lie at or before the subscriber's checkpoint.
      const { server, log } = setup(OLD);
      const c = cat();
      server.record(`${c}-a`, 'One', ev('One'));
      const checkpoint = `${String(server.log[0].position).padStart(20, '0')}:${String(server.log[0].position).padStart(20, '0')}`;
      server.record('$stats-x', '$statsCollected', {});
      // When it subscribes from that checkpoint.
      const seen: string[] = [];
      const sub = log.subscribe([c], checkpoint, (e) => {
        seen.push(e.event.type);
      });
      // Then it is caught up without any event.
      await within(sub.caughtUp, 2_000, 'caught-up');
      expect(seen).toEqual([]);
      await sub.stop();
    });

    it.each([
      ['with the server signal', NEW],
      ['without the server signal', OLD],
    ])('waits for the handler to finish the buffered events (%s)', async (_, behaviour) => {
      // Given three matching events the client receives at once, and a handler that holds them.
      const { server, log } = setup(behaviour);
      const c = cat();
      for (const t of ['One', 'Two', 'Three']) server.record(`${c}-a`, t, ev(t));
      const gated = gatedHandler();
      let caughtUp = false;
      // When the subscription starts and the server (if it can) says it caught up.
      const sub = log.subscribe([c], 'start', gated.handler);
      void sub.caughtUp.then(() => (caughtUp = true));
      await settleIo();
      // Then caught-up waits for the handler; it resolves once all three are finished.
      expect({ caughtUp, finished: gated.finished }).toEqual({ caughtUp: false, finished: [] });
      gated.release();
      await within(sub.caughtUp, 2_000, 'caught-up');
      expect(gated.finished).toEqual(['One', 'Two', 'Three']);
      await sub.stop();
    });

    it('counts a filter checkpoint past the last matching event only once what came before it is handled', async () => {
      // Given a server without the signal, and a matching event seen at start but deleted (its
      // stream removed) before the subscription reaches it.
      const { server, log } = setup(OLD);
      const c = cat();
      server.record(`${c}-a`, 'One', ev('One'));
      const gone = server.record(`${c}-b`, 'Gone', ev('Gone'));
      server.undeliverable.add(gone);
      const gated = gatedHandler();
      let caughtUp = false;
      const sub = log.subscribe([c], 'start', gated.handler);
      void sub.caughtUp.then(() => (caughtUp = true));
      await settleIo();
      // When the server reports a checkpoint past it while 'One' is still in the handler.
      server.subscriptions[0].call.send(signalResp('checkpoint', gone.position + 50n));
      await settleIo();
      expect(caughtUp).toBe(false);
      gated.release();
      // Then caught-up follows the handled event.
      await within(sub.caughtUp, 2_000, 'caught-up');
      expect(gated.finished).toEqual(['One']);
      await sub.stop();
    });
  });

  describe('end of a subscription', () => {
    it('rejects closed with LogUnavailableError when the server ends the subscription', async () => {
      // Given a live subscription.
      const { server, log } = setup(NEW);
      const sub = log.subscribe([cat()], 'start', () => undefined);
      await within(sub.caughtUp, 2_000, 'caught-up');
      // When the server completes the call with an OK status.
      server.subscriptions[0].call.finish();
      // Then it is an outage, not a clean stop.
      const err = await within(sub.closed, 2_000, 'closed').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LogUnavailableError);
      expect((err as LogUnavailableError).operation).toBe('subscribe');
    });

    it('resolves closed after stop(), and never calls the handler again', async () => {
      // Given a live subscription.
      const { server, log } = setup(NEW);
      const c = cat();
      const seen: string[] = [];
      const sub = log.subscribe([c], 'start', (e) => {
        seen.push(e.event.type);
      });
      await within(sub.caughtUp, 2_000, 'caught-up');
      // When it is stopped and an event arrives afterwards.
      await sub.stop();
      server.record(`${c}-a`, 'Late', ev('Late'));
      await settleIo();
      // Then closed resolved and nothing was delivered.
      await expect(sub.closed).resolves.toBeUndefined();
      expect(seen).toEqual([]);
    });
  });

  describe('idempotent retries', () => {
    it.each([
      ['a server that omits the position of a retry', OLD],
      ['a server that returns a position for a retry', NEW],
    ])('reports a retry as duplicate and a first write as not (%s)', async (_, behaviour) => {
      // Given a stream with one append of two events.
      const { log } = setup(behaviour);
      const s = `${cat()}-a`;
      const created = await log.append(s, [ev('A')], 'no_stream');
      const batch = [ev('B'), ev('C')];
      const first = await log.append(s, batch, created.version);
      // When the append is retried at once, then again after a later append.
      const retry = await log.append(s, batch, created.version);
      const later = await log.append(s, [ev('D')], first.version);
      const late = await log.append(s, batch, created.version);
      const againFirst = await log.append(s, [(await log.read(s)).events[0].event], 'no_stream');
      // Then only the first writes are new, and retries return the original version and position.
      expect([created, first, later].map((r) => r.duplicate)).toEqual([false, false, false]);
      expect([retry, late, againFirst].map((r) => r.duplicate)).toEqual([true, true, true]);
      expect([retry.version, late.version, againFirst.version]).toEqual([first.version, first.version, created.version]);
      expect([retry.position, late.position]).toEqual([first.position, first.position]);
      expect((await log.read(s)).events.map((e) => e.event.type)).toEqual(['A', 'B', 'C', 'D']);
    });
  });

  it('returns the position of the last event of a multi-event append', async () => {
    // Given a server that returns the position of the write (its first record).
    const { log } = setup(NEW);
    const s = `${cat()}-a`;
    // When three events are appended at once.
    const r = await log.append(s, [ev('A'), ev('B'), ev('C')], 'no_stream');
    // Then the append's position is the third event's, as a read or a subscription sees it.
    const read = await log.read(s);
    expect(r.position).toBe(read.events[2].position);
    expect(r.version).toBe(read.events[2].version);
  });

  describe('read access to $all', () => {
    it('fails a subscription with EventLogConfigError naming the missing right when access is denied', async () => {
      // Given a user without read access to $all.
      const { log } = setup({ ...NEW, allDenied: true });
      // When a subscription starts (what a service does at boot).
      const sub = log.subscribe([cat()], 'start', () => undefined);
      // Then both promises reject with a configuration error that says what to grant.
      const err = await within(sub.caughtUp, 2_000, 'caught-up').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EventLogConfigError);
      expect((err as Error).message).toMatch(/needs read access to \$all/);
      await expect(sub.closed).rejects.toBeInstanceOf(EventLogConfigError);
    });

    it('maps a denied head() the same way, from the client error the server causes', async () => {
      // Given a user without read access to $all.
      const { server, log } = setup({ ...NEW, allDenied: true });
      // When the head is asked for.
      const err = await log.head().catch((e: unknown) => e);
      // Then the adapter reports the missing right, where the client itself raised AccessDeniedError.
      expect(err).toBeInstanceOf(EventLogConfigError);
      expect((err as Error).message).toMatch(/needs read access to \$all/);
      const direct = async (): Promise<void> => {
        for await (const _ of server.client().readAll({ direction: 'backwards', fromPosition: 'end', maxCount: 1 })) {
          // nothing: the read is denied
        }
      };
      await expect(direct()).rejects.toBeInstanceOf(AccessDeniedError);
    });
  });
});
