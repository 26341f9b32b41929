import { Inject, Injectable } from '@nestjs/common';
import { CouncilEvent, CouncilRunState, councilRunStream, EMPTY_RUN, foldRun } from '@conclave/council-protocol';
import type {
  AggregateSource,
  AppendResult,
  EventLog,
  EventMetadata,
  ExpectedVersion,
  LoadedAggregate,
  StreamVersion,
} from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';

export interface LoadedRun {
  state: CouncilRunState;
  /** The stream's version to pass back as `expected` on the next append. */
  version: StreamVersion | 'no_stream';
  /** The metadata of the run's first commit (its trace context, when it was traced). */
  origin?: EventMetadata;
}

/**
 * Runs whose latest state this process keeps (those it drives or has just read), most recent last:
 * enough for the runs in flight and the ones just ended, whose decisions are being published.
 */
const KNOWN_RUNS = 64;

/** Events noticed per run, the latest: enough to cover the appends in flight when they land. */
const NOTICED_PER_RUN = 64;

const holds = (state: CouncilRunState, eventId: string) => state.status !== 'empty' && state.applied_event_ids[eventId] === true;

/**
 * The run's stream `council-run-<id>` in the event log: read and fold, append with the expected
 * version. The latest state this process knows of each recent run (the one its own append or read
 * produced) is kept, so loading a run nobody else wrote to since costs one version check instead
 * of reading and folding its whole stream. A load waits for this process's appends to the run
 * that are still in flight, so a reader that saw the appended events first (the run index) finds
 * the state they produced.
 *
 * The log can let an append in on a stale version (a clustered JetStream during a leader
 * election): the state folded from it then lacks the commit that came first, at the version the
 * log returned, and a version check would serve it for good. The run index tells the repository
 * of every event of the runs (`observed`): a kept state that lacks an event the log holds is
 * dropped, and an append's folded state is not kept when it lacks one noticed lately; the next
 * load reads both commits.
 */
@Injectable()
export class RunRepository {
  private readonly known = new Map<string, LoadedRun>();
  private readonly appending = new Map<string, Promise<unknown>>();
  /** The events the run index noticed lately, per run (the latest runs), oldest first. */
  private readonly noticed = new Map<string, string[]>();

  constructor(@Inject(EVENT_LOG) private readonly log: EventLog) {}

  async load(runId: string): Promise<LoadedRun> {
    await this.appending.get(runId);
    const known = this.known.get(runId);
    if (known && (await this.version(runId)) === known.version) return known;
    const read = await (this.log as EventLog<CouncilEvent>).read(councilRunStream(runId));
    if (!read.exists) return { state: EMPTY_RUN, version: 'no_stream' };
    const origin = read.events[0]?.metadata ?? known?.origin;
    const loaded: LoadedRun = { state: foldRun(read.events.map((e) => e.event)), version: read.version, ...(origin ? { origin } : {}) };
    this.remember(runId, loaded);
    return loaded;
  }

  /**
   * Appends with the expected version. `after`, the state the events fold the run into (the caller
   * folded it already), is kept as the run's latest state once the append succeeds.
   */
  append(runId: string, events: readonly CouncilEvent[], expected: ExpectedVersion, after?: CouncilRunState): Promise<AppendResult> {
    const appended = (this.log as EventLog<CouncilEvent>).append(councilRunStream(runId), events, expected).then((result) => {
      if (after && !result.duplicate) {
        // An event noticed that the folded state lacks: the log let this append in after it.
        if ((this.noticed.get(runId) ?? []).every((id) => holds(after, id)))
          this.remember(runId, { state: after, version: result.version });
        else this.known.delete(runId);
      }
      return result;
    });
    const settled = appended.catch(() => undefined);
    this.appending.set(runId, settled);
    void settled.then(() => {
      if (this.appending.get(runId) === settled) this.appending.delete(runId);
    });
    return appended;
  }

  /**
   * An event of the run is in the log (the run index read it): a kept state that lacks it is
   * dropped. For a later commit that is a read the version check would ask for anyway; for one the
   * kept state was folded past (an append let in after it), it is the only way to find out.
   */
  observed(runId: string, eventId: string): void {
    const known = this.known.get(runId);
    const ids = this.noticed.get(runId) ?? [];
    ids.push(eventId);
    if (ids.length > NOTICED_PER_RUN) ids.shift();
    // Kept after the state is dropped: an append decided on that state may still land after it.
    this.noticed.delete(runId);
    this.noticed.set(runId, ids);
    if (this.noticed.size > 2 * KNOWN_RUNS) this.noticed.delete(this.noticed.keys().next().value as string);
    if (known && !holds(known.state, eventId)) this.known.delete(runId);
  }

  /** Keeps a state this process folded (never mutated afterwards) as the run's latest. */
  private remember(runId: string, loaded: LoadedRun): void {
    const origin = loaded.origin ?? this.known.get(runId)?.origin;
    this.known.delete(runId);
    this.known.set(runId, origin ? { ...loaded, origin } : loaded);
    if (this.known.size > KNOWN_RUNS) this.known.delete(this.known.keys().next().value as string);
  }

  version(runId: string): Promise<StreamVersion | 'no_stream'> {
    return this.log.version(councilRunStream(runId));
  }

  /** The run's stream as a command pipeline source: every load a read (runs are driven from memory). */
  source(runId: string): AggregateSource<CouncilRunState, CouncilEvent> {
    const stream = councilRunStream(runId);
    const read = async (): Promise<LoadedAggregate<CouncilRunState>> => ({ stream, ...(await this.load(runId)), cached: false });
    return {
      load: read,
      reload: read,
      isCurrent: async (loaded) => (await this.version(runId)) === loaded.version,
      append: (_stream, events, expected) => this.append(runId, events, expected),
    };
  }
}
