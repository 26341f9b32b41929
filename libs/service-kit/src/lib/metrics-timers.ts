import { ConclaveMetrics, METRICS } from './metrics';
import type { TimerQueue } from './timer-queue';

/** A timer queue's size and due items, read at scrape time. */
export function trackTimerQueue(metrics: ConclaveMetrics, name: string, queue: Pick<TimerQueue, 'size' | 'dueCount'>): void {
  metrics.observe(METRICS.timerItems, { queue: name }, () => queue.size);
  metrics.observe(METRICS.timerDue, { queue: name }, () => queue.dueCount());
}
