import type { StartFrom } from '@conclave/event-log';
import { ConclaveMetrics, METRICS } from './metrics';
import { trackReactor } from './metrics-reactors';
import type { ServiceConfig } from './service-config';

const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const of = (name: string) => `${name}{reactor="audit",service="svc"}`;

/** A reactor as the metrics see it: its position, whether it follows, whether it is a standby. */
function reactor(state: { checkpoint: StartFrom; isFollowing: boolean; isStandby: boolean }) {
  return { ...state, handled: 0 };
}

describe('trackReactor: what a reactor reports at scrape time', () => {
  it('given a replica holding the lease that has caught up, when scraped, then it follows (1) and its lag is the head minus its position', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    trackReactor(metrics, 'audit', ['audit'], reactor({ checkpoint: '40', isFollowing: true, isStandby: false }), async () => 42);

    const text = await metrics.exposition();

    expect(sample(text, of(METRICS.reactorFollowing.name))).toBe(1);
    expect(sample(text, of(METRICS.reactorLag.name))).toBe(2);
    expect(sample(text, of(METRICS.reactorPosition.name))).toBe(40);
  });

  it('given a replica whose subscription was lost, when scraped, then it reports 0, which the ConclaveReactorNotFollowing alert pages on', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    trackReactor(metrics, 'audit', ['audit'], reactor({ checkpoint: '40', isFollowing: false, isStandby: false }), async () => 42);

    expect(sample(await metrics.exposition(), of(METRICS.reactorFollowing.name))).toBe(0);
  });

  it('given a standby replica (another holds the lease), when scraped, then it reports neither following nor lag, so a standby never pages as a reactor that stopped', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const standby = reactor({ checkpoint: '12', isFollowing: false, isStandby: true });
    trackReactor(metrics, 'audit', ['audit'], standby, async () => 42);

    const text = await metrics.exposition();

    expect(sample(text, of(METRICS.reactorFollowing.name))).toBeUndefined();
    expect(sample(text, of(METRICS.reactorLag.name))).toBeUndefined();
    expect(sample(text, of(METRICS.reactorPosition.name))).toBe(12);
  });

  it('given a standby that takes the lease over, when scraped again, then it reports whether it follows from then on', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const state = { checkpoint: '12' as StartFrom, isFollowing: false, isStandby: true, handled: 0 };
    trackReactor(metrics, 'audit', ['audit'], state, async () => 42);
    expect(sample(await metrics.exposition(), of(METRICS.reactorFollowing.name))).toBeUndefined();

    Object.assign(state, { isStandby: false, isFollowing: true, checkpoint: '42' });

    const text = await metrics.exposition();
    expect(sample(text, of(METRICS.reactorFollowing.name))).toBe(1);
    expect(sample(text, of(METRICS.reactorLag.name))).toBe(0);
  });
});

describe('ConclaveMetrics: counter series exist at 0 before their first increment', () => {
  it('given an outbox that has acknowledged nothing yet, when scraped, then its published counter is there at 0 (a rate of it is 0, not absent)', async () => {
    const metrics = new ConclaveMetrics('svc', { instrumentation: 'on' } as ServiceConfig);
    const published = metrics.increment(METRICS.outboxPublished, { outbox: 'resolver-outbox' });
    const series = `${METRICS.outboxPublished.name}{outbox="resolver-outbox",service="svc"}`;

    expect(sample(await metrics.exposition(), series)).toBe(0);
    published(3);
    expect(sample(await metrics.exposition(), series)).toBe(3);
  });
});
