import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  AcpError,
  CommandResult,
  DeciderConfig,
  ProposalCommand,
  ProposalEvent,
  ProposalState,
  evolveProposal,
  handleProposalCommand,
  initialProposalState,
  proposalStream,
  PROPOSAL_STREAM_CATEGORY,
} from '@conclave/acp-protocol';
import { AggregateCache, ConcurrencyError, EventLog, LoadedAggregate, LogEvent, isEventLogError } from '@conclave/event-log';
import { Readiness } from './readiness';
import { DECIDER_CONFIG, EVENT_LOG } from './tokens';

export interface ProposalStoreOptions {
  decider: DeciderConfig;
  /** Attempts of read → decide → append under contention before CONFLICT. */
  maxAttempts?: number;
  /** Proposals whose folded state stays in memory. */
  maxCachedProposals?: number;
}

/**
 * The one pipeline every proposal command goes through (STYLE.md "What we take" 7): load the
 * proposal (from a cache fed by the log, checked fresh against the log's version), run the pure
 * decider, append with the version just read. On a version conflict (another replica wrote
 * first) it re-reads and decides again, bounded; the caller never sees a lost write.
 */
@Injectable()
export class ProposalStore implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ProposalStore.name);
  private readonly cache: AggregateCache<ProposalState, ProposalEvent>;
  private readonly maxAttempts: number;
  private readonly options: ProposalStoreOptions;
  private started = false;

  constructor(
    @Inject(EVENT_LOG) readonly log: EventLog<LogEvent>,
    @Inject(DECIDER_CONFIG) decider: DeciderConfig,
    @Optional() readiness?: Readiness,
    @Optional() @Inject('PROPOSAL_STORE_OPTIONS') options?: Omit<ProposalStoreOptions, 'decider'>,
  ) {
    this.options = { ...options, decider };
    this.maxAttempts = this.options.maxAttempts ?? 8;
    readiness?.register('proposal-cache', () => this.started);
    this.cache = new AggregateCache<ProposalState, ProposalEvent>(log as unknown as EventLog<ProposalEvent>, {
      categories: [PROPOSAL_STREAM_CATEGORY],
      initial: () => initialProposalState,
      evolve: evolveProposal,
      maxEntries: this.options.maxCachedProposals ?? 10_000,
    });
  }

  get decider(): DeciderConfig {
    return this.options.decider;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.cache.start();
    this.started = true;
  }

  async onApplicationShutdown(): Promise<void> {
    this.started = false;
    await this.cache.stop();
  }

  load(proposalId: string): Promise<LoadedAggregate<ProposalState>> {
    return this.cache.load(proposalStream(proposalId)).catch(rethrowInfrastructure);
  }

  /**
   * Decides and appends; returns what was appended (nothing when the decider had nothing to do).
   * A caller that has just loaded the proposal (to authorize, say) passes it, and the first
   * attempt decides on it instead of loading again; a conflict reloads as usual.
   */
  async execute(command: ProposalCommand, loaded?: LoadedAggregate<ProposalState>): Promise<CommandResult> {
    const stream = proposalStream(command.data.proposal_id);
    let preloaded = loaded?.stream === stream ? loaded : undefined;
    for (let attempt = 1; ; attempt++) {
      const loaded = preloaded ?? (await this.cache.load(stream).catch(rethrowInfrastructure));
      preloaded = undefined;
      const result = handleProposalCommand(loaded.state, command, this.options.decider);
      if (result.events.length === 0) return result;
      try {
        await this.cache.append(stream, result.events, loaded.version);
        return result;
      } catch (err) {
        if (err instanceof ConcurrencyError && attempt < this.maxAttempts) {
          this.logger.debug(`version conflict on ${stream}, attempt ${attempt}: deciding again`);
          continue;
        }
        if (err instanceof ConcurrencyError) {
          throw new AcpError('CONFLICT', `${stream} kept changing under ${this.maxAttempts} attempts; retry the command`);
        }
        rethrowInfrastructure(err);
      }
    }
  }
}

/** Event-log failures become INTERNAL at the edge; the cause is logged, not sent. */
function rethrowInfrastructure(err: unknown): never {
  if (err instanceof AcpError) throw err;
  if (isEventLogError(err) && err.code === 'EVENT_TOO_LARGE') {
    throw new AcpError('PAYLOAD_TOO_LARGE', err.message);
  }
  throw err;
}
