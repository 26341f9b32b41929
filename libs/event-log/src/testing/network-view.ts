import { ConcurrencyError } from '../core/errors';
import type { EventLog, LogEvent } from '../core/types';

export interface NetworkViewOptions {
  /** Milliseconds, taken in turn: before each call and after its answer (and before each delivery, with `deliveries`). */
  readonly delays: readonly number[];
  /** Subscribers get each event a moment after it was stored, not at once. Default false. */
  readonly deliveries?: boolean;
  /** Told of each append refused on a stale version: whether the replicas really raced. */
  readonly onConflict?: () => void;
}

/**
 * The log as one replica reaches it over the network, for tests of concurrent writers: each
 * read, version and append is answered after a small delay each way, the log acting in between;
 * with `deliveries`, each event reaches a subscriber a moment after it was stored, so that an
 * append's reply often comes before its event and replicas see the log at different times.
 */
export function overTheNetwork<E extends LogEvent>(log: EventLog<E>, options: NetworkViewOptions): EventLog<E> {
  let n = 0;
  const wait = () => new Promise((r) => setTimeout(r, options.delays[n++ % options.delays.length]));
  const slow =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await wait();
      const result = await call(...args);
      await wait();
      return result;
    };
  const calls: Partial<EventLog<E>> = {
    read: slow((s: string) => log.read(s)),
    version: slow((s: string) => log.version(s)),
    append: slow((...a: Parameters<EventLog<E>['append']>) =>
      log.append(...a).catch((err: unknown) => {
        if (err instanceof ConcurrencyError) options.onConflict?.();
        throw err;
      }),
    ),
    ...(options.deliveries
      ? {
          subscribe: (categories, from, handler) =>
            log.subscribe(categories, from, async (e) => {
              await wait();
              await handler(e);
            }),
        }
      : {}),
  };
  return new Proxy(log, { get: (t, p) => (p in calls ? calls[p as keyof EventLog<E>] : (t as never)[p]) }) as EventLog<E>;
}
