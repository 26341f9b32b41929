import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import {
  AcpError,
  DeciderConfig,
  ProposalCommand,
  ProposalEvent,
  ProposalState,
  decide,
  evolveProposal,
  initialProposalState,
  proposalStream,
  PROPOSAL_STREAM_CATEGORY,
} from '@conclave/acp-protocol';
import {
  AggregateCache,
  CommandConflictError,
  CommandOutcome,
  Decider,
  EventLog,
  LoadedAggregate,
  LogEvent,
  handleCommand,
  isEventLogError,
} from '@conclave/event-log';
import { Readiness } from './readiness';
import { DECIDER_CONFIG, EVENT_LOG } from './tokens';
import { withLogFields } from './logging';
import { ConclaveMetrics } from './metrics';
import { proposalOutcomeRecorder, trackProposalCache } from './metrics-proposals';

export interface ProposalStoreOptions {
  decider: DeciderConfig;
  /** Attempts of read → decide → append under contention before CONFLICT. */
  maxAttempts?: number;
  /** Proposals whose folded state stays in memory. */
  maxCachedProposals?: number;
}

/**
 * The proposal aggregate's command pipeline: `handleCommand` over a cache of folded proposals
 * fed by the log. A writer decides on the cached state and appends with its version; a stale
 * entry costs a conflict and a reread, never a wrong decision, and a rejection made on a cached
 * state is confirmed against the log's version before it is returned.
 */
@Injectable()
export class ProposalStore implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ProposalStore.name);
  private readonly cache: AggregateCache<ProposalState, ProposalEvent>;
  private readonly maxAttempts: number;
  private readonly options: ProposalStoreOptions;
  private readonly proposalDecider: Pick<Decider<ProposalState, ProposalCommand, ProposalEvent>, 'decide' | 'evolve'>;
  private started = false;
  private readonly recordOutcome: ReturnType<typeof proposalOutcomeRecorder> | undefined;

  constructor(
    @Inject(EVENT_LOG) readonly log: EventLog<LogEvent>,
    @Inject(DECIDER_CONFIG) decider: DeciderConfig,
    @Optional() readiness?: Readiness,
    @Optional() @Inject('PROPOSAL_STORE_OPTIONS') options?: Omit<ProposalStoreOptions, 'decider'>,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    this.options = { ...options, decider };
    this.maxAttempts = this.options.maxAttempts ?? 8;
    this.proposalDecider = { decide: (command, state) => decide(command, state, decider), evolve: evolveProposal };
    readiness?.register('proposal-cache', () => this.started && this.cache.following);
    this.cache = new AggregateCache<ProposalState, ProposalEvent>(log as unknown as EventLog<ProposalEvent>, {
      categories: [PROPOSAL_STREAM_CATEGORY],
      initial: () => initialProposalState,
      evolve: evolveProposal,
      maxEntries: this.options.maxCachedProposals ?? 10_000,
    });
    if (metrics) {
      this.recordOutcome = proposalOutcomeRecorder(metrics);
      trackProposalCache(metrics, this.cache.stats);
    }
  }

  get decider(): DeciderConfig {
    return this.options.decider;
  }

  get cacheStats() {
    return this.cache.stats;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.cache.start();
    this.started = true;
  }

  async onApplicationShutdown(): Promise<void> {
    this.started = false;
    await this.cache.stop();
  }

  /**
   * The proposal as the log has it now (`'log'`, for queries), or as cached (`'cache'`, for a
   * command that only needs what never changes, such as the domain, before it is decided).
   */
  load(proposalId: string, freshness: 'log' | 'cache' = 'log'): Promise<LoadedAggregate<ProposalState>> {
    return this.cache.load(proposalStream(proposalId), { freshness }).catch(rethrowInfrastructure);
  }

  /** The proposal's events as the log has them now, in order: for a read model folded per proposal. */
  async read(proposalId: string): Promise<ProposalEvent[]> {
    const read = await this.log.read(proposalStream(proposalId)).catch(rethrowInfrastructure);
    return read.exists ? read.events.map((e) => e.event as ProposalEvent) : [];
  }

  /**
   * Decides and appends; returns what was appended (nothing when the decider had nothing to do).
   * A caller that has just loaded the proposal passes it, and the first attempt decides on it.
   */
  async execute(command: ProposalCommand, loaded?: LoadedAggregate<ProposalState>): Promise<CommandOutcome<ProposalState, ProposalEvent>> {
    const stream = proposalStream(command.data.proposal_id);
    try {
      const outcome = await withLogFields({ command_id: command.command_id, proposal_id: command.data.proposal_id }, () =>
        handleCommand(this.cache, stream, this.proposalDecider, command, {
          maxAttempts: this.maxAttempts,
          loaded,
          onConflict: (s, attempt) => this.logger.debug(`version conflict on ${s}, attempt ${attempt}: deciding again`),
        }),
      );
      this.recordOutcome?.(command, outcome);
      return outcome;
    } catch (err) {
      if (err instanceof CommandConflictError) {
        this.logger.warn(`${stream}: still conflicting after ${err.attempts} attempts`);
        throw new AcpError('CONFLICT', `${stream} kept changing under ${err.attempts} attempts; retry the command`);
      }
      rethrowInfrastructure(err);
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
