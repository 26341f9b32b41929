import { trace } from '@opentelemetry/api';
import { AckPolicy, connect, DeliverPolicy, JetStreamManager, NatsConnection } from 'nats';
import { readConsumer } from './feeds';

/**
 * readConsumer against the real NATS server: a delivery lost in transit (the server sent it, the
 * connection dropped before the reader had it, as in a server restart) comes back after the ack
 * wait, after newer events the reader has already read. It must be read then, once.
 */
describe('readConsumer: a delivery lost in transit', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const run = Date.now().toString(36);
  const stream = `FEEDS_sdk${run}`;
  const tracer = trace.getTracer('feeds.int.spec');
  const body = (n: number) => new TextEncoder().encode(JSON.stringify({ n }));

  beforeAll(async () => {
    nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
    jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`feeds${run}.>`] });
  });
  afterAll(async () => {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  const cases = [
    { events: 3, askAckFloorEvery: undefined, what: 'the ack floor asked for rarely (the default)' },
    { events: 6, askAckFloorEvery: 1, what: 'the ack floor asked for after every event' },
  ];
  it.each(cases)(
    'given event 1 delivered to a pull that was lost, with $what, when a reader reads the newer ones first, then 1 comes back after the ack wait and is read, and each once',
    async ({ events, askAckFloorEvery }) => {
      // Given the events and a durable consumer with a 1 s ack wait, event 1 delivered and lost
      const js = nc.jetstream();
      const numbers = Array.from({ length: events }, (_, i) => i + 1);
      const durable = `lost-${run}-${events}`;
      const subject = `feeds${run}.events${events}`;
      for (const n of numbers) await js.publish(subject, body(n));
      await jsm.consumers.add(stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: subject,
        ack_wait: 1_000_000_000,
      });
      const consumer = await js.consumers.get(stream, durable);
      const lost = await consumer.next({ expires: 2_000 });
      expect(lost?.json()).toEqual({ n: 1 }); // delivered, never acknowledged: the reader never had it

      // When a reader follows the consumer until it has read them all and the server holds none
      // unacknowledged (so no copy of any can come any more)
      const stop = new AbortController();
      const seen: number[] = [];
      const reading = (async () => {
        for await (const e of readConsumer(consumer, (x) => x as { n: number }, tracer, stop.signal, askAckFloorEvery)) seen.push(e.n);
      })();
      const settled = async () => {
        if (seen.length < events) return false;
        const info = await jsm.consumers.info(stream, durable);
        return info.num_pending === 0 && info.num_ack_pending === 0;
      };
      const until = Date.now() + 10_000;
      while (!(await settled()) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      stop.abort();
      await reading;

      // Then it has read the newer ones, then 1, each once, and nothing is left unacknowledged
      expect(seen).toEqual([...numbers.slice(1), 1]);
      const info = await jsm.consumers.info(stream, durable);
      expect({ pending: info.num_pending, unacknowledged: info.num_ack_pending }).toEqual({ pending: 0, unacknowledged: 0 });
    },
    30_000,
  );
});
