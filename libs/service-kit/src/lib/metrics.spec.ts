import { ConclaveMetrics, METRICS } from './metrics';
import type { ServiceConfig } from './service-config';

const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const series = (suffix: string, le?: string) =>
  `conclave_api_request_duration_seconds_${suffix}{${le ? `le="${le}",` : ''}service="svc",subject="v1.respond"}`;

describe('ConclaveMetrics.observer: a hot-path histogram series', () => {
  it('given more observations than it buffers, when scraped between and after them, then every one is counted once, in its bucket, with the exact sum', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const observe = metrics.observer(METRICS.apiDuration, { subject: 'v1.respond' });
    // 700 observations: past the buffer twice, with a scrape in the middle of a batch.
    const values = Array.from({ length: 700 }, (_, i) => (i % 7 === 0 ? 0.3 : 0.002));

    values.slice(0, 400).forEach((v) => observe(v));
    const between = await metrics.exposition();
    values.slice(400).forEach((v) => observe(v));
    const after = await metrics.exposition();

    expect(sample(between, series('count'))).toBe(400);
    expect(sample(after, series('count'))).toBe(700);
    expect(sample(after, series('bucket', '0.0025'))).toBe(600);
    expect(sample(after, series('bucket', '0.5'))).toBe(700);
    expect(sample(after, series('sum'))).toBeCloseTo(100 * 0.3 + 600 * 0.002, 9);
  });

  it('given a value that is not finite, when observed, then it is not counted and the scrape still answers', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const observe = metrics.observer(METRICS.apiDuration, { subject: 'v1.respond' });

    observe(Number.NaN);
    observe(Number.POSITIVE_INFINITY);
    observe(0.004);
    const text = await metrics.exposition();

    expect(sample(text, series('count'))).toBe(1);
    expect(sample(text, series('sum'))).toBe(0.004);
  });
});
