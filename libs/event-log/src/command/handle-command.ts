import { ConcurrencyError, EventLogConfigError } from '../core/errors';
import type { AppendResult, ExpectedVersion, LogEvent } from '../core/types';
import type { LoadedAggregate } from '../cache/aggregate-cache';

/**
 * A decider as a value: the pure rules of one aggregate. `decide` returns the events a command
 * yields (none when there is nothing to do) or throws the domain's typed rejection.
 */
export interface Decider<S, C, E extends LogEvent> {
  decide(command: C, state: S): readonly E[];
  evolve(state: S, event: E): S;
  initialState(stream: string): S;
  /** Folds several events at once (e.g. one copy, then in place); `evolve` one by one otherwise. */
  evolveAll?(state: S, events: readonly E[]): S;
}

/** Where a command pipeline loads and appends: an AggregateCache, or a plain reader of the log. */
export interface AggregateSource<S, E extends LogEvent> {
  load(stream: string, options: { freshness: 'cache' }): Promise<LoadedAggregate<S>>;
  reload(stream: string): Promise<LoadedAggregate<S>>;
  isCurrent(loaded: LoadedAggregate<S>): Promise<boolean>;
  append(stream: string, events: readonly E[], expected: ExpectedVersion): Promise<AppendResult>;
}

export interface HandleCommandOptions<S, E extends LogEvent = LogEvent> {
  /** Attempts of load → decide → append under contention. Default 8. */
  readonly maxAttempts?: number;
  /** The aggregate the caller has just loaded (to authorize, say): the first attempt decides on it. */
  readonly loaded?: LoadedAggregate<S>;
  /**
   * Told of each conflict that is retried (for a log line or a metric); the next attempt waits for
   * a promise it returns (a pause, so that writers who collide again and again fall out of step).
   */
  readonly onConflict?: (stream: string, attempt: number) => void | Promise<void>;
  /**
   * A guard on other aggregates, run after each decision that appends and before its append (it
   * may throw to refuse). What it writes elsewhere lies between the load the decision was made on
   * and the append expecting that load's version, so a change to this stream in between fails the
   * append and the next attempt decides and guards afresh.
   */
  readonly beforeAppend?: (loaded: LoadedAggregate<S>, events: readonly E[]) => Promise<void>;
}

export interface CommandOutcome<S, E extends LogEvent> {
  /** What was appended; empty when the decider had nothing to do. */
  readonly events: readonly E[];
  /** The state after the events. */
  readonly state: S;
  /** The stream's version after the append (or as loaded when nothing was appended). */
  readonly version: LoadedAggregate<S>['version'];
  /** The log recognised a retry of a commit it already holds. */
  readonly duplicate: boolean;
}

/** The stream kept changing under every attempt: the caller may retry the command later. */
export class CommandConflictError extends Error {
  readonly code = 'CONFLICT' as const;
  constructor(
    readonly stream: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(`${stream} kept changing under ${attempts} attempts`, options);
    this.name = 'CommandConflictError';
  }
}

/**
 * The one command pipeline: load (the cache may serve it), decide, append with the version the
 * decision was made on. A conflict reloads from the log and decides again, bounded. A decision
 * that appends nothing (a rejection, or nothing to do) made on a cached state is only returned
 * once the log confirms that state is current, so no reply is ever based on a stale state.
 */
export async function handleCommand<S, C, E extends LogEvent>(
  source: AggregateSource<S, E>,
  stream: string,
  decider: Pick<Decider<S, C, E>, 'decide' | 'evolve' | 'evolveAll'>,
  command: C,
  options: HandleCommandOptions<S, E> = {},
): Promise<CommandOutcome<S, E>> {
  const maxAttempts = options.maxAttempts ?? 8;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new EventLogConfigError('maxAttempts', 'a positive integer');
  let loaded = options.loaded?.stream === stream ? options.loaded : await source.load(stream, { freshness: 'cache' });
  for (let attempt = 1; ; attempt++) {
    let events: readonly E[];
    try {
      events = decider.decide(command, loaded.state);
    } catch (rejection) {
      if (loaded.cached && !(await source.isCurrent(loaded))) {
        loaded = await source.reload(stream);
        continue;
      }
      throw rejection;
    }
    if (events.length === 0) {
      if (loaded.cached && !(await source.isCurrent(loaded))) {
        loaded = await source.reload(stream);
        continue;
      }
      return { events, state: loaded.state, version: loaded.version, duplicate: false };
    }
    // Awaited only when given: every other command's append goes on without an extra turn.
    if (options.beforeAppend) await options.beforeAppend(loaded, events);
    try {
      const appended = await source.append(stream, events, loaded.version);
      let state = loaded.state;
      if (decider.evolveAll) state = decider.evolveAll(state, events);
      else for (const e of events) state = decider.evolve(state, e);
      return { events, state, version: appended.version, duplicate: appended.duplicate };
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      if (attempt >= maxAttempts) throw new CommandConflictError(stream, attempt, { cause: err });
      const pause = options.onConflict?.(stream, attempt);
      if (pause) await pause;
      loaded = await source.reload(stream);
    }
  }
}
