import { connect } from 'nats';
import { inboxOf } from './inbox';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

describe('inboxOf', () => {
  it('given a connection with an inbox prefix of its own, then reply inboxes are made under it; without one, under _INBOX', async () => {
    const own = await connect({ servers: NATS_URL, inboxPrefix: '_INBOX_alice' });
    const plain = await connect({ servers: NATS_URL });
    try {
      expect(inboxOf(own)).toMatch(/^_INBOX_alice\.[A-Za-z0-9]+$/);
      expect(inboxOf(plain)).toMatch(/^_INBOX\.[A-Za-z0-9]+$/);
    } finally {
      await Promise.all([own.close(), plain.close()]);
    }
  });
});
