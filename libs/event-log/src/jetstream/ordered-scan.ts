import { consumerOpts, type JetStreamClient, type JsMsg } from 'nats';

/** A scan that did not reach its last sequence: the consumer went quiet, or its subscription ended. */
export class ScanIncompleteError extends Error {
  constructor(
    readonly subject: string,
    readonly lastSeq: number,
    readonly reachedSeq: number,
    why: string,
  ) {
    super(`scan of ${subject} stopped at sequence ${reachedSeq} before ${lastSeq}: ${why}`);
    this.name = 'ScanIncompleteError';
  }
}

/**
 * Reads every message on `subject` in stream order, from the first up to `lastSeq` (which the
 * caller knows exists), through an ordered consumer. Fails with `ScanIncompleteError` when no
 * message comes for `idleMs`: an ordered consumer can deliver nothing and never say so (one
 * recreated on a replica that stopped following a killed leader; nats.js retrying a lost one's
 * creation without end), and a scan that waits for it waits for ever, with whoever awaits the
 * read (a reactor's handler, which is never taken for a stall while it runs).
 */
export async function scanOrdered(
  js: JetStreamClient,
  subject: string,
  lastSeq: number,
  idleMs: number,
  each: (m: JsMsg) => void,
): Promise<void> {
  const opts = consumerOpts();
  opts.orderedConsumer();
  opts.deliverAll();
  opts.filterSubject(subject);
  const sub = await js.subscribe(subject, opts);
  let reached = 0;
  // Ordered delivery: a message past `lastSeq` means none up to it is still to come.
  let done = false;
  let quiet = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      quiet = true;
      sub.unsubscribe();
    }, idleMs);
  };
  try {
    arm();
    for await (const m of sub) {
      if (m.seq > lastSeq) {
        done = true;
        break;
      }
      arm();
      each(m);
      reached = m.seq;
      if (m.seq === lastSeq) {
        done = true;
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  if (!done) {
    throw new ScanIncompleteError(subject, lastSeq, reached, quiet ? `no message for ${idleMs} ms` : 'the subscription ended');
  }
}
