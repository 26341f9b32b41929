import { acpStreamNames, acpSubjects } from '@conclave/messaging';
import { ConclaveClient, FeedError } from '@conclave/sdk';
import { connect, type JetStreamManager, type NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { eventually, NATS_URL } from '../support/conclave-harness';

/** How a reader's loop ended: its error's name and code, or `ended`. */
async function ending(iterator: AsyncGenerator<unknown>): Promise<string> {
  try {
    for await (const _ of iterator) void _;
    return 'ended';
  } catch (err) {
    return err instanceof FeedError ? `FeedError ${err.code}` : `${(err as Error).name}: ${(err as Error).message}`;
  }
}

/**
 * A reader whose decision stream, or whose durable consumer, is deleted under it: nats.js waits
 * for them to come back, which a feed's consumer never does, so the SDK ends the loop instead.
 * A stream of this test's own, so no other test's reader is touched.
 */
describe('SDK: a decisions() reader whose stream or consumer is deleted', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let client: ConclaveClient;
  let stream: string;

  beforeEach(async () => {
    nc = await connect({ servers: NATS_URL });
    jsm = await nc.jetstreamManager();
    const suffix = `feed_deleted_${ulid()}`;
    const prefix = `feeddeleted${ulid().toLowerCase()}`;
    stream = acpStreamNames(suffix).decisions;
    await jsm.streams.add({ name: stream, subjects: [acpSubjects(prefix).allDecisions] });
    client = await ConclaveClient.connect({ nc, prefix, streamSuffix: suffix });
  });
  afterEach(async () => {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  /** Starts reading; resolves once the reader's consumer exists, with how its loop ends (an object: a promise would be awaited). */
  const following = async (iterator: AsyncGenerator<unknown>): Promise<{ ended: Promise<string> }> => {
    const ended = ending(iterator);
    await eventually(async () => ((await jsm.consumers.list(stream).next()).length > 0 ? true : undefined), 5_000, "the reader's consumer");
    return { ended };
  };

  it.each([
    ['an ephemeral reader', undefined],
    ['a durable reader', 'reader-1'],
  ])('given %s following, when its stream is deleted, then its loop ends with FeedError FEED_DELETED', async (_, durable) => {
    const { ended } = await following(client.decisions(durable ? { durable } : {}));

    await jsm.streams.delete(stream);

    await expect(ended).resolves.toBe('FeedError FEED_DELETED');
  });

  it('given a durable reader following, when its consumer is deleted and the stream stays, then its loop ends with FeedError FEED_DELETED', async () => {
    const { ended } = await following(client.decisions({ durable: 'reader-2' }));

    await jsm.consumers.delete(stream, 'reader-2');

    await expect(ended).resolves.toBe('FeedError FEED_DELETED');
  });

  it('given a reader following, when it is aborted, then its loop just ends', async () => {
    const stop = new AbortController();
    const { ended } = await following(client.decisions({ signal: stop.signal }));

    stop.abort();

    await expect(ended).resolves.toBe('ended');
  });
});
