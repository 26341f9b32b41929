import { createInbox, type NatsConnection } from 'nats';

/**
 * A reply inbox under the connection's own inbox prefix. Where NATS accounts give each user
 * its own prefix (`_INBOX_<user>.>`), an inbox under the default `_INBOX.` cannot be subscribed.
 */
export function inboxOf(nc: NatsConnection): string {
  const prefix = (nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
  return createInbox(prefix || undefined);
}

/**
 * Whether a request's reply subject is an inbox (`_INBOX.…`, or a user's `_INBOX_<user>.…`). The
 * reply subject is the requester's choice and NATS checks no permission on it: whoever answers
 * publishes there with its own rights. A service answers only into an inbox, so that a request
 * cannot make it write into a stream, a KV bucket or another service's subjects. A request that
 * crossed an account import carries the server's own reply subject (`_R_.…`), which routes the
 * answer back into the requester's account; no stream captures it.
 */
export function isReplyInbox(subject: string | undefined): subject is string {
  return typeof subject === 'string' && (subject.startsWith('_INBOX') || subject.startsWith('_R_.'));
}
