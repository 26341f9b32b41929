import { ConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

/**
 * CONCLAVE_INSTRUMENTATION=off (what the bench's `off` arm runs): the services still decide and
 * still serve /metrics, but what a scrape shows of requests, appends and outbox publishes stays
 * empty, so the bench's comparison leaves exactly those out.
 */
describe('CONCLAVE_INSTRUMENTATION=off: no request, append or outbox series', () => {
  const h = new ConclaveHarness({ CONCLAVE_INSTRUMENTATION: 'off' });

  beforeAll(async () => {
    await h.start('intake', 'resolver');
  });
  afterAll(() => h.stop());

  it('given a decided proposal, when its services are scraped, the per-request, per-append and per-publish series have no samples', async () => {
    const decisions = new DecisionCollector(h.client, { domain: 'off.>' });
    const p = await h.client.propose({
      domain: 'off.a',
      author: 'agent-off',
      payload: {},
      quorum: 1,
      created_at: new Date().toISOString(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-b', domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 });
    const [decision] = await decisions.waitFor(p.proposal_id);
    expect(decision.outcome).toBe('approved');

    for (const i of h.instances) {
      const res = await fetch(`${await i.app.getUrl()}/metrics`);
      expect(res.status).toBe(200);
      const samples = (await res.text()).split('\n').filter((l) => l && !l.startsWith('#'));
      for (const name of [
        'conclave_api_requests_total',
        'conclave_api_request_duration_seconds_count',
        'conclave_eventlog_appends_total',
        'conclave_eventlog_append_duration_seconds_count',
        'conclave_outbox_published_messages_total',
      ]) {
        expect([i.name, name, samples.filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))]).toEqual([i.name, name, []]);
      }
      // Process metrics stay on: the endpoint itself still answers for Prometheus.
      expect(samples.some((l) => l.startsWith('process_cpu_seconds_total'))).toBe(true);
    }
  });
});
