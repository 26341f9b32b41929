import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { COUNCIL_EVENT_TYPES as E, COUNCIL_RUN_STREAM_PREFIX, CouncilEvent } from '@conclave/council-protocol';
import type { StoredEvent } from '@conclave/event-log';
import { Reactor, Reactors, Readiness } from '@conclave/service-kit';
import { RunDriver } from './run-driver';
import { RunLeases } from './run-lease';
import { RunRepository } from './run-repository';

/** The category of run streams: `council-run-<id>` is in category `council-run`. */
export const COUNCIL_RUN_CATEGORY = COUNCIL_RUN_STREAM_PREFIX.slice(0, -1);

/**
 * Follows the `council-run` category (a reactor with a snapshot: resubscribed from where it was
 * when the log goes away and comes back): which runs are not terminated (resumed at
 * boot: killed mid-run, the controller continues from the log), which appends came from another
 * writer (the driving loop re-reads).
 */
@Injectable()
export class RunIndex implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(RunIndex.name);
  private readonly running = new Set<string>();
  private readonly reactor: Reactor<CouncilEvent>;
  private ready = false;
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    reactors: Reactors,
    private readonly driver: RunDriver,
    private readonly leases: RunLeases,
    readiness: Readiness,
    private readonly repo: RunRepository,
  ) {
    readiness.register('council-runs', () => this.ready);
    this.reactor = reactors.create<CouncilEvent>({
      name: 'council-runs',
      categories: [COUNCIL_RUN_CATEGORY],
      apply: (e) => this.apply(e),
      // The unterminated runs are all it keeps: a restart reads only the events after the snapshot.
      snapshot: {
        schema: 1,
        take: () => [...this.running],
        restore: (saved) => {
          for (const runId of saved as string[]) this.running.add(runId);
        },
      },
    });
  }

  get unterminated(): readonly string[] {
    return [...this.running];
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
    for (const runId of this.running) await this.driver.resume(runId);
    if (this.running.size > 0) this.logger.log(`resumed ${this.running.size} unterminated run(s) from the log`);
    this.ready = true;
    this.scheduleSweep();
  }

  /**
   * A run whose driving replica died is taken over once its lease expires: a sweep every half
   * lease, each after the last one finished, so a slow lease bucket does not pile sweeps up.
   */
  private scheduleSweep(): void {
    if (!this.ready) return;
    this.sweep = setTimeout(
      () => void this.takeOver().finally(() => this.scheduleSweep()),
      Math.max(Math.floor(this.leases.leaseMs / 2), 100),
    );
    this.sweep.unref?.();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.sweep);
    this.ready = false;
    await this.reactor.stop();
  }

  private async takeOver(): Promise<void> {
    for (const runId of [...this.running]) {
      if (!this.ready) return;
      if (this.driver.drives(runId)) continue;
      await this.driver.resume(runId).catch((err: Error) => this.logger.warn(`run ${runId}: takeover failed: ${err.message}`));
    }
  }

  private apply(stored: StoredEvent<CouncilEvent>): void {
    const { event } = stored;
    const runId = event.correlation_id;
    if (event.type === E.RunStarted) this.running.add(runId);
    else if (event.type === E.RunTerminated) this.running.delete(runId);
    this.repo.observed(runId, event.event_id);
    if (this.ready && stored.endOfCommit) this.driver.observed(runId, event.event_id);
  }
}
