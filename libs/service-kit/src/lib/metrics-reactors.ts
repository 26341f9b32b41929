import type { CategoryFilter, StartFrom } from '@conclave/event-log';
import { ConclaveMetrics, METRICS } from './metrics';
import { positionNumber } from './metrics-event-log';

interface Followed {
  readonly checkpoint: StartFrom;
  readonly isFollowing: boolean;
  readonly handled: number;
  /**
   * A standby replica (another holds the lease): neither its lag nor whether it follows is
   * reported, since it does not follow by design and a 0 would page as a reactor that stopped.
   */
  readonly isStandby?: boolean;
}

/**
 * A reactor's position, lag, events handled and whether it follows the log, read at scrape time.
 * The lag asks the log for the newest event of the reactor's categories (`headOf`); without a
 * probe (EventStoreDB), it is not reported.
 */
export function trackReactor(
  metrics: ConclaveMetrics,
  name: string,
  categories: CategoryFilter,
  reactor: Followed,
  headOf: ((categories: CategoryFilter) => Promise<number | undefined>) | undefined,
): void {
  const labels = { reactor: name };
  metrics.observe(METRICS.reactorPosition, labels, () => positionNumber(reactor.checkpoint));
  metrics.observe(METRICS.reactorFollowing, labels, () => (reactor.isStandby ? undefined : reactor.isFollowing ? 1 : 0));
  metrics.observeTotal(METRICS.reactorHandled, labels, () => reactor.handled);
  if (headOf) {
    metrics.observe(METRICS.reactorLag, labels, async () => {
      if (reactor.isStandby) return undefined;
      const head = await headOf(categories);
      if (head === undefined) return undefined;
      return Math.max(0, head - positionNumber(reactor.checkpoint));
    });
  }
}
