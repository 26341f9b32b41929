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

/**
 * The run's stream `council-run-<id>` in the event log: read and fold, append with the expected
 * version. The state this process last read of each recent run is kept, so loading a run nobody
 * wrote to since costs one version check instead of reading and folding its whole stream. Only
 * states read from the log are kept, never one folded from this process's own append: the log can
 * let an append in on a stale version (a clustered JetStream during a leader election), and the
 * folded state then lacks the commit that came first while its version is the log's, so a version
 * check would serve it for good; a read folds both. A load waits for this process's appends to
 * the run that are still in flight, so a reader that saw the appended events first (the run
 * index) finds the state they produced.
 */
@Injectable()
export class RunRepository {
  private readonly known = new Map<string, LoadedRun>();
  private readonly appending = new Map<string, Promise<unknown>>();

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

  /** Appends with the expected version; the next load reads what the log holds after it. */
  append(runId: string, events: readonly CouncilEvent[], expected: ExpectedVersion): Promise<AppendResult> {
    const appended = (this.log as EventLog<CouncilEvent>).append(councilRunStream(runId), events, expected);
    const settled = appended.catch(() => undefined);
    this.appending.set(runId, settled);
    void settled.then(() => {
      if (this.appending.get(runId) === settled) this.appending.delete(runId);
    });
    return appended;
  }

  /** Keeps a state read from the log (never mutated afterwards) as the run's latest. */
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
