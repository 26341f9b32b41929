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

/** The run's stream `council-run-<id>` in the event log: read and fold, append with the expected version. */
@Injectable()
export class RunRepository {
  constructor(@Inject(EVENT_LOG) private readonly log: EventLog) {}

  async load(runId: string): Promise<LoadedRun> {
    const read = await (this.log as EventLog<CouncilEvent>).read(councilRunStream(runId));
    if (!read.exists) return { state: EMPTY_RUN, version: 'no_stream' };
    const origin = read.events[0]?.metadata;
    return { state: foldRun(read.events.map((e) => e.event)), version: read.version, ...(origin ? { origin } : {}) };
  }

  append(runId: string, events: readonly CouncilEvent[], expected: ExpectedVersion): Promise<AppendResult> {
    return (this.log as EventLog<CouncilEvent>).append(councilRunStream(runId), events, expected);
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
