import { Injectable } from '@nestjs/common';
import { COUNCIL_EVENT_TYPES, CouncilEvent, councilRunStream } from '@conclave/council-protocol';
import { categoryOf } from '@conclave/event-log';
import { ConclaveMetrics, METRICS } from '@conclave/service-kit';

/**
 * Council series counted from the run events this process records (each once, whichever
 * replica records it): runs started and terminated by state, member task failures by reason,
 * and the tokens and cost members reported.
 */
@Injectable()
export class CouncilMetrics {
  constructor(metrics: ConclaveMetrics) {
    const runs = metrics.counter(METRICS.councilRuns);
    const failures = metrics.counter(METRICS.councilTaskFailures);
    const tokens = metrics.counter(METRICS.councilTokens);
    const cost = metrics.counter(METRICS.councilCost);
    metrics.onAppended(categoryOf(councilRunStream('metrics')), (events) => {
      for (const e of events as CouncilEvent[]) {
        if (e.type === COUNCIL_EVENT_TYPES.RunStarted) runs.inc({ state: 'started' });
        else if (e.type === COUNCIL_EVENT_TYPES.RunTerminated) runs.inc({ state: e.data.terminal_state });
        else if (e.type === COUNCIL_EVENT_TYPES.MemberFailed) failures.inc({ reason: e.data.reason });
        else if (e.type === COUNCIL_EVENT_TYPES.TaskAnswerRefused) failures.inc({ reason: 'answer-refused' });
        const usage = (e.data as { usage?: { tokens?: unknown; cost?: unknown } }).usage;
        if (typeof usage?.tokens === 'number' && usage.tokens > 0) tokens.inc(usage.tokens);
        if (typeof usage?.cost === 'number' && usage.cost > 0) cost.inc(usage.cost);
      }
    });
  }
}
