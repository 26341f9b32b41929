import { createInbox, type NatsConnection } from 'nats';

/**
 * A reply inbox under the connection's own inbox prefix. Where NATS accounts give each user
 * its own prefix (`_INBOX_<user>.>`), an inbox under the default `_INBOX.` cannot be subscribed.
 */
export function inboxOf(nc: NatsConnection): string {
  const prefix = (nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
  return createInbox(prefix || undefined);
}
