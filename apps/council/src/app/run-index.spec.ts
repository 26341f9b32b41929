import 'reflect-metadata';
import type { CouncilEvent } from '@conclave/council-protocol';
import { InMemoryEventLog, LogUnavailableError, type EventLog, type StoredEvent, type Subscription } from '@conclave/event-log';
import { loadConfig, MemorySnapshots, Reactors, Readiness, ServiceConfig } from '@conclave/service-kit';
import type { RunDriver } from './run-driver';
import { RunIndex } from './run-index';
import type { RunLeases } from './run-lease';
import { RunRepository } from './run-repository';

const event = (type: string, runId: string, n: number) =>
  ({
    event_id: `${runId}-e${n}`,
    type,
    correlation_id: runId,
    occurred_at: '2026-01-01T00:00:00.000Z',
    data: {},
  }) as unknown as CouncilEvent;

const until = async (check: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  return check();
};

/** `log` whose first subscription is lost to an outage after its first live event (a stalled consumer, a server gone). */
function losingFirstSubscription(log: InMemoryEventLog<CouncilEvent>): EventLog<CouncilEvent> {
  let first = true;
  return new Proxy(log, {
    get: (t, p) =>
      p === 'subscribe'
        ? (cats: never, from: never, handler: (e: StoredEvent<CouncilEvent>) => Promise<void>): Subscription => {
            const dying = first;
            first = false;
            let lose!: () => void;
            const closed = new Promise<void>((_, reject) => {
              lose = () => reject(new LogUnavailableError('subscribe', undefined, { cause: new Error('consumer stalled') }));
            });
            let live = false;
            const sub: Subscription = t.subscribe(cats, from, async (e) => {
              await handler(e);
              if (dying && live) {
                void sub.stop();
                lose();
              }
            });
            void sub.caughtUp.then(() => (live = true));
            return { caughtUp: sub.caughtUp, closed: Promise.race([closed, sub.closed]), stop: () => sub.stop() };
          }
        : (t as never)[p],
  }) as EventLog<CouncilEvent>;
}

// Both ways a log may store an append: each event a commit (EventStoreDB), the append one commit (JetStream).
describe.each(['event', 'append'] as const)('RunIndex: the runs the council follows (commits per %s)', (commits) => {
  it('given its subscription lost to a log outage, then it resumes after the last event and sees every later run start and end, once', async () => {
    const log = new InMemoryEventLog<CouncilEvent>({ commits });
    await log.append('council-run-r1', [event('RunStarted', 'r1', 1)], 'no_stream');
    const readiness = new Readiness();
    const reactors = new Reactors(
      losingFirstSubscription(log) as unknown as EventLog,
      jest.fn(),
      loadConfig(ServiceConfig, {}),
      'council',
      new MemorySnapshots(),
      readiness,
    );
    const observed: string[] = [];
    const driver = {
      observed: (_run: string, eventId: string) => observed.push(eventId),
      resume: jest.fn(async () => undefined),
      drives: () => true,
    } as unknown as RunDriver;
    const index = new RunIndex(
      reactors,
      driver,
      { leaseMs: 60_000 } as RunLeases,
      readiness,
      new RunRepository(log as unknown as EventLog),
    );
    await index.onApplicationBootstrap();
    expect(index.unterminated).toEqual(['r1']);
    expect(driver.resume).toHaveBeenCalledWith('r1');

    // When r1 ends (the first subscription dies after handling it) and r2 starts and ends later
    await log.append('council-run-r1', [event('RunTerminated', 'r1', 2)], '0');
    await until(() => !readiness.report().ready);
    await log.append('council-run-r2', [event('RunStarted', 'r2', 1)], 'no_stream');
    await log.append('council-run-r3', [event('RunStarted', 'r3', 1)], 'no_stream');
    await log.append('council-run-r2', [event('RunTerminated', 'r2', 2)], '0');

    // Then the index follows again, and has seen each event once
    expect(await until(() => readiness.report().ready && observed.length === 4)).toBe(true);
    expect(index.unterminated).toEqual(['r3']);
    expect(observed).toEqual(['r1-e2', 'r2-e1', 'r3-e1', 'r2-e2']);
    await index.beforeApplicationShutdown();
  });

  it('given a snapshot saved at shutdown, when a new index starts, then it reads only the later events and keeps the same unterminated runs', async () => {
    const log = new InMemoryEventLog<CouncilEvent>({ commits });
    const snapshots = new MemorySnapshots();
    const config = loadConfig(ServiceConfig, {});
    const driver = { observed: () => undefined, resume: async () => undefined, drives: () => true } as unknown as RunDriver;
    const start = async () => {
      const readiness = new Readiness();
      const index = new RunIndex(
        new Reactors(log as unknown as EventLog, jest.fn(), config, 'council', snapshots, readiness),
        driver,
        { leaseMs: 60_000 } as RunLeases,
        readiness,
        new RunRepository(log as unknown as EventLog),
      );
      await index.onApplicationBootstrap();
      return index;
    };
    await log.append('council-run-r1', [event('RunStarted', 'r1', 1)], 'no_stream');
    await log.append('council-run-r2', [event('RunStarted', 'r2', 1)], 'no_stream');
    await log.append('council-run-r1', [event('RunTerminated', 'r1', 2)], '0');
    const first = await start();
    await first.beforeApplicationShutdown();

    await log.append('council-run-r3', [event('RunStarted', 'r3', 1)], 'no_stream');
    const read = jest.spyOn(log, 'subscribe');
    const second = await start();

    expect(second.unterminated).toEqual(['r2', 'r3']);
    // It resumed after the snapshot's position, not from the start of the log.
    expect(read.mock.calls.map(([, from]) => from)).not.toContain('start');
    await second.beforeApplicationShutdown();
  });
  it('given takeover sweeps slower than their period (a lease bucket answering slowly), then no sweep starts before the last one finished', async () => {
    const log = new InMemoryEventLog<CouncilEvent>({ commits });
    const readiness = new Readiness();
    const reactors = new Reactors(
      log as unknown as EventLog,
      jest.fn(),
      loadConfig(ServiceConfig, {}),
      'council',
      new MemorySnapshots(),
      readiness,
    );
    await log.append('council-run-r1', [event('RunStarted', 'r1', 1)], 'no_stream');
    let inFlight = 0;
    let most = 0;
    let sweeps = 0;
    const driver = {
      observed: () => undefined,
      // Another replica drives r1; checking its lease takes three sweep periods.
      drives: () => false,
      resume: async () => {
        sweeps++;
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 300));
        inFlight--;
      },
    } as unknown as RunDriver;
    const index = new RunIndex(reactors, driver, { leaseMs: 200 } as RunLeases, readiness, new RunRepository(log as unknown as EventLog));
    await index.onApplicationBootstrap();
    await until(() => sweeps >= 4, 5_000);
    await index.beforeApplicationShutdown();
    expect(sweeps).toBeGreaterThanOrEqual(4);
    expect(most).toBe(1);
  });
});
