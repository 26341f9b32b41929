import type { NatsConnection } from 'nats';
import { withJetStreamApiPrefix } from './feeds';

/** A stand-in connection that records what its JetStream factories were asked for. */
function fakeConnection() {
  const asked: { jetstream: unknown[]; jetstreamManager: unknown[] } = { jetstream: [], jetstreamManager: [] };
  const nc = {
    closed: false,
    jetstream(opts?: unknown) {
      asked.jetstream.push(opts);
      return 'js';
    },
    jetstreamManager(opts?: unknown) {
      asked.jetstreamManager.push(opts);
      return Promise.resolve('jsm');
    },
    isClosed(this: { closed: boolean }) {
      return this.closed;
    },
  };
  return { nc: nc as unknown as NatsConnection, raw: nc, asked };
}

describe('withJetStreamApiPrefix', () => {
  it('given a connection and a prefix, when JetStream is asked for, then it is under the prefix, and the manager asks for no account info', async () => {
    const { nc, asked } = fakeConnection();
    const prefixed = withJetStreamApiPrefix(nc, '$JS.conclave.API');

    prefixed.jetstream();
    await prefixed.jetstreamManager();

    expect(asked.jetstream).toEqual([{ apiPrefix: '$JS.conclave.API' }]);
    expect(asked.jetstreamManager).toEqual([{ apiPrefix: '$JS.conclave.API', checkAPI: false }]);
  });

  it("given the caller's own options, then they win over the defaults", async () => {
    const { nc, asked } = fakeConnection();
    const prefixed = withJetStreamApiPrefix(nc, '$JS.conclave.API');

    await prefixed.jetstreamManager({ checkAPI: true, timeout: 1_000 });

    expect(asked.jetstreamManager).toEqual([{ apiPrefix: '$JS.conclave.API', checkAPI: true, timeout: 1_000 }]);
  });

  it('given any other member, then it is the connection itself (methods keep their connection as this)', () => {
    const { nc, raw } = fakeConnection();
    const prefixed = withJetStreamApiPrefix(nc, '$JS.conclave.API');

    const isClosed = prefixed.isClosed;
    raw.closed = true;

    expect(isClosed()).toBe(true);
  });
});
