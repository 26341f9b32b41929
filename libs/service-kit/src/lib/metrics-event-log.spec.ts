import { ConcurrencyError, InMemoryEventLog, type LogEvent } from '@conclave/event-log';
import { ConclaveMetrics, METRICS } from './metrics';
import { MeteredEventLog } from './metrics-event-log';
import { metricsObserver } from './metrics-requests';
import type { ServiceConfig } from './service-config';

const ev = (id: string): LogEvent => ({ event_id: id, type: 'Happened' });
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('MeteredEventLog', () => {
  it('given appends that succeed, repeat and conflict, when scraped, then each result is counted, the events too, and every append timed', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const log = new MeteredEventLog(new InMemoryEventLog(), metrics);
    const told: number[] = [];
    metrics.onAppended('thing', (events) => told.push(events.length));

    await log.append('thing-1', [ev('a'), ev('b')], 'no_stream');
    await log.append('thing-1', [ev('a'), ev('b')], 'no_stream');
    await expect(log.append('thing-1', [ev('c')], 'no_stream')).rejects.toBeInstanceOf(ConcurrencyError);
    const text = await metrics.exposition();

    const s = (result: string) => sample(text, `conclave_eventlog_appends_total{category="thing",result="${result}",service="svc"}`);
    expect([s('ok'), s('duplicate'), s('conflict')]).toEqual([1, 1, 1]);
    expect(sample(text, 'conclave_eventlog_appended_events_total{category="thing",service="svc"}')).toBe(2);
    expect(sample(text, 'conclave_eventlog_append_duration_seconds_count{service="svc",category="thing"}')).toBe(3);
    expect(told).toEqual([2]);
  });

  it('given no append yet, when scraped, then the families are there without series, and counts accumulate across scrapes', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const log = new MeteredEventLog(new InMemoryEventLog(), metrics);

    const before = await metrics.exposition();
    await log.append('thing-1', [ev('a')], 'no_stream');
    await metrics.exposition();
    await log.append('thing-2', [ev('b')], 'no_stream');
    const after = await metrics.exposition();

    expect(before).toContain(`# TYPE ${METRICS.logAppends.name} counter`);
    expect(sample(before, 'conclave_eventlog_appends_total{category="thing",result="ok",service="svc"}')).toBeUndefined();
    expect(sample(after, 'conclave_eventlog_appends_total{category="thing",result="ok",service="svc"}')).toBe(2);
  });
});

describe('metricsObserver', () => {
  it('given answered and refused requests, when scraped, then requests, durations, errors and refusals are counted by subject', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const { replied } = metricsObserver(metrics);
    if (!replied) throw new Error('the metrics observer counts replies');
    const request = { pattern: 'v1.propose', subject: 'p.v1.propose', headers: undefined };

    replied(request, { ok: true }, 0.002);
    replied(request, { ok: false, error: { code: 'FORBIDDEN', field: 'author' } }, 0.001);
    const text = await metrics.exposition();

    expect(sample(text, 'conclave_api_requests_total{subject="v1.propose",service="svc"}')).toBe(2);
    expect(sample(text, 'conclave_api_request_duration_seconds_count{service="svc",subject="v1.propose"}')).toBe(2);
    expect(sample(text, 'conclave_api_errors_total{subject="v1.propose",code="FORBIDDEN",service="svc"}')).toBe(1);
    expect(sample(text, 'conclave_auth_refusals_total{subject="v1.propose",code="FORBIDDEN",reason="author",service="svc"}')).toBe(1);
  });
});
