import {
  InMemoryCheckpointStore,
  InMemoryEventLog,
  LogUnavailableError,
  type CategoryFilter,
  type EventHandler,
  type LogEvent,
  type StartFrom,
  type StoredEvent,
  type Subscription,
} from '@conclave/event-log';
import { connect, type NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { LogOutbox, type OutboxMessage } from './log-outbox';
import { Readiness } from './readiness';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
type E = LogEvent & { data: { n: number } };
const ev = (n: number): E => ({ event_id: ulid(), type: 'Counted', data: { n } });

/** A log whose first `failures` subscriptions fail their catch-up, as a log in an outage does. */
class FlakyLog extends InMemoryEventLog<E> {
  subscriptions = 0;
  constructor(private failures: number) {
    super();
  }
  override subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    this.subscriptions++;
    if (this.failures-- > 0) {
      const down = new LogUnavailableError('subscribe', undefined, { cause: new Error('an outage') });
      const failed = Promise.reject(down);
      failed.catch(() => undefined);
      return { caughtUp: failed, closed: failed, stop: async () => undefined };
    }
    return super.subscribe(categories, from, handler);
  }
}

class CountingOutbox extends LogOutbox<E> {
  constructor(
    log: FlakyLog,
    nc: NatsConnection,
    private readonly stream: string,
  ) {
    super({ checkpoint: 'counting-outbox', categories: ['count'] }, log, new InMemoryCheckpointStore<null>(), nc, new Readiness());
  }
  protected async prepare(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    await jsm.streams.add({ name: this.stream, subjects: [`${this.stream}.>`] });
  }
  protected async messagesFor(event: StoredEvent<E>): Promise<OutboxMessage[]> {
    return [{ subject: `${this.stream}.n`, body: { n: event.event.data.n }, msgId: event.event.event_id }];
  }
}

describe('LogOutbox under a log that keeps failing', () => {
  let nc: NatsConnection;
  const stream = `OUTBOX_TEST_${ulid()}`;
  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
  });
  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  it('given a log whose subscriptions fail three times while catching up, when the outbox starts, then it resubscribes once per failure (never doubling) and publishes every event once', async () => {
    // Given: 20 events, and a log that fails the first three catch-ups (each failure is reported
    // twice: as the catch-up and as the end of the subscription).
    const log = new FlakyLog(3);
    for (let n = 1; n <= 20; n++) await log.append(`count-${n}`, [ev(n)], 'no_stream');
    const outbox = new CountingOutbox(log, nc, stream);

    // When: it starts, and the restart loop gets through the outage.
    await outbox.onApplicationBootstrap();
    const jsm = await nc.jetstreamManager();
    const deadline = Date.now() + 15_000;
    while ((await jsm.streams.info(stream)).state.messages < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // Long enough for a doubled loop to show itself (one restart a second).
    await new Promise((r) => setTimeout(r, 1_500));
    await outbox.onApplicationShutdown();

    // Then: the first try and one per failure, and each event published once.
    expect(log.subscriptions).toBe(4);
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(20);
  }, 30_000);
});
