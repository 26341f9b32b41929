import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METRICS } from '@conclave/service-kit';
import { ConclaveHarness, eventually, ServiceName } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';
import { parseExposition, type Sample, sumOf } from '../support/metrics-text';

const promtool = spawnSync('promtool', ['--version']).status === 0;

/**
 * Every service's /metrics after real traffic (Appendix C's quorum, timeout and escalation
 * cases, a refused request, a malformed one): the key series exist with non-zero samples, each
 * carries its service, and no label holds an id.
 */
describe('observability: /metrics of the running services after traffic', () => {
  const h = new ConclaveHarness();
  const services: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'audit'];
  const ids: string[] = [];
  const scraped = new Map<ServiceName, { text: string; samples: Sample[] }>();

  const scrape = async (name: ServiceName) => {
    const instance = h.instances.find((i) => i.name === name);
    if (!instance) throw new Error(`${name} is not running`);
    const res = await fetch(`${await instance.app.getUrl()}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    return { text, samples: parseExposition(text) };
  };
  const value = (name: ServiceName, metric: string, labels: Record<string, string> = {}) =>
    sumOf(scraped.get(name)!.samples, metric, labels);

  beforeAll(async () => {
    await h.start(...services);
    const decisions = new DecisionCollector(h.client);
    const now = () => new Date().toISOString();
    const quorum = await h.client.propose({
      domain: 'risk.credit',
      author: 'agent-risk',
      payload: { action: 'approve_loan' },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(quorum.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.85, trust_score: 0.9 });
    await h.client.endorse(quorum.proposal_id, { participant_id: 'agent-b', domain_authority: 0.8, confidence: 0.7, trust_score: 0.85 });
    const timeout = await h.client.propose({
      domain: 'finance.budget',
      author: 'agent-fin',
      payload: { action: 'raise_budget' },
      quorum: 3,
      created_at: now(),
      expires_at: new Date(Date.now() + 800).toISOString(),
    });
    await h.client.endorse(timeout.proposal_id, { participant_id: 'agent-a', domain_authority: 0.8, confidence: 0.75, trust_score: 0.9 });
    const tie = await h.client.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { action: 'raise_price' },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(tie.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
    await h.client.challenge(tie.proposal_id, { participant_id: 'agent-b', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
    const open = await h.client.propose({
      domain: 'ops.deploy',
      author: 'agent-ops',
      payload: { action: 'deploy' },
      quorum: 5,
      created_at: now(),
    });
    ids.push(quorum.proposal_id, timeout.proposal_id, tie.proposal_id, open.proposal_id);
    for (const id of ids.slice(0, 3)) await decisions.waitFor(id);
    // A refused command (an unknown proposal) and a malformed one.
    await expect(h.client.get('01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
    await h.nc.request(`${h.prefix}.v1.get`, new TextEncoder().encode('{not json'), { timeout: 5_000 });
    // Settled: the escalation routed, every reactor at the head of its categories.
    await eventually(
      async () => {
        for (const name of services) scraped.set(name, await scrape(name));
        const settled =
          value('escalation', 'conclave_escalation_ladder_steps_total', { step: 'routed' }) >= 1 &&
          services.every((name) =>
            scraped
              .get(name)!
              .samples.filter((s) => s.name === 'conclave_reactor_lag_events')
              .every((s) => s.value === 0),
          ) &&
          value('audit', 'conclave_audit_chain_entries') >= 13;
        return settled ? true : undefined;
      },
      20_000,
      'the services to settle',
    );
  });
  afterAll(() => h.stop());

  it('intake counts and times each NATS API subject, and its errors by code', () => {
    expect(value('intake', 'conclave_api_requests_total', { subject: 'v1.propose' })).toBe(4);
    expect(value('intake', 'conclave_api_requests_total', { subject: 'v1.respond' })).toBe(5);
    expect(value('intake', 'conclave_api_request_duration_seconds_count', { subject: 'v1.propose' })).toBe(4);
    expect(value('intake', 'conclave_api_request_duration_seconds_sum', { subject: 'v1.respond' })).toBeGreaterThan(0);
    expect(value('intake', 'conclave_api_request_duration_seconds_bucket', { subject: 'v1.propose', le: '+Inf' })).toBe(4);
    expect(value('intake', 'conclave_api_errors_total', { subject: 'v1.get', code: 'PROPOSAL_NOT_FOUND' })).toBe(1);
    expect(value('intake', 'conclave_api_errors_total', { subject: 'v1.get', code: 'INVALID_JSON' })).toBe(1);
    expect(value('intake', 'conclave_api_errors_total', { subject: 'v1.propose' })).toBe(0);
  });

  it('the event log appends are counted and timed by category and result', () => {
    // Four submissions and five responses, each one commit.
    expect(value('intake', 'conclave_eventlog_appends_total', { category: 'proposal', result: 'ok' })).toBe(9);
    expect(value('intake', 'conclave_eventlog_appended_events_total', { category: 'proposal' })).toBe(9);
    expect(value('intake', 'conclave_eventlog_append_duration_seconds_count', { category: 'proposal' })).toBe(9);
    expect(value('resolver', 'conclave_eventlog_appends_total', { category: 'proposal', result: 'ok' })).toBeGreaterThanOrEqual(2);
  });

  it('decisions are counted once, by outcome and trigger, in the service that recorded them', () => {
    expect(value('resolver', 'conclave_acp_decisions_total', { outcome: 'approved', trigger: 'quorum' })).toBe(1);
    expect(value('resolver', 'conclave_acp_decisions_total', { outcome: 'escalated', trigger: 'quorum' })).toBe(1);
    expect(value('sweeper', 'conclave_acp_decisions_total', { outcome: 'approved', trigger: 'timeout' })).toBe(1);
    expect(value('intake', 'conclave_acp_decisions_total')).toBe(0);
    expect(value('resolver', 'conclave_acp_quorum_to_decision_seconds_count')).toBe(2);
    expect(value('resolver', 'conclave_acp_quorum_to_decision_seconds_sum')).toBeGreaterThan(0);
    expect(value('sweeper', 'conclave_acp_expiry_lateness_seconds_count')).toBe(1);
    // The one still open.
    expect(value('resolver', 'conclave_acp_pending_proposals')).toBe(1);
  });

  it('reactors report their position, lag and events handled; the outbox its publishes', () => {
    expect(value('resolver', 'conclave_reactor_position', { reactor: 'resolver' })).toBeGreaterThan(0);
    expect(value('resolver', 'conclave_reactor_lag_events', { reactor: 'resolver' })).toBe(0);
    expect(value('resolver', 'conclave_reactor_events_handled_total', { reactor: 'resolver' })).toBeGreaterThanOrEqual(12);
    expect(value('resolver', 'conclave_reactor_following', { reactor: 'resolver' })).toBe(1);
    expect(value('sweeper', 'conclave_reactor_position', { reactor: 'sweeper' })).toBeGreaterThan(0);
    expect(value('audit', 'conclave_reactor_position', { reactor: 'audit' })).toBeGreaterThan(0);
    // Four proposals, three decisions, one escalation notice.
    expect(value('resolver', 'conclave_outbox_published_messages_total', { outbox: 'resolver-outbox' })).toBe(8);
    expect(value('resolver', 'conclave_outbox_publish_duration_seconds_count', { outbox: 'resolver-outbox' })).toBe(8);
    expect(
      scraped
        .get('resolver')!
        .samples.some((s) => s.name === 'conclave_outbox_pending_messages' && s.labels['outbox'] === 'resolver-outbox'),
    ).toBe(true);
    // Intake decides responses on cached proposals.
    expect(value('intake', 'conclave_proposal_cache_entries')).toBeGreaterThan(0);
    expect(value('intake', 'conclave_proposal_cache_lookups_total', { result: 'hit' })).toBeGreaterThan(0);
  });

  it('timer queues, open escalations, escalation steps and the audit chain are gauged', () => {
    // The open proposal has no deadline; the sweeper's queue is empty once the timeout fired.
    expect(
      scraped.get('sweeper')!.samples.find((s) => s.name === 'conclave_timer_queue_items' && s.labels['queue'] === 'sweeper')?.value,
    ).toBe(0);
    expect(
      scraped.get('resolver')!.samples.some((s) => s.name === 'conclave_timer_queue_due_items' && s.labels['queue'] === 'resolver'),
    ).toBe(true);
    expect(value('escalation', 'conclave_escalation_open_escalations')).toBe(1);
    expect(value('escalation', 'conclave_escalation_ladder_steps_total', { step: 'routed' })).toBe(1);
    // 4 submissions, 5 responses, 3 decisions, 1 routing, and the refused get.
    expect(value('audit', 'conclave_audit_chain_entries')).toBeGreaterThanOrEqual(14);
  });

  it('process metrics are on, every Conclave series names its service, and labels stay low-cardinality', () => {
    const ulid = /^[0-9A-HJKMNP-TV-Z]{26}$/;
    for (const name of services) {
      const { samples } = scraped.get(name)!;
      expect(samples.some((s) => s.name === 'process_cpu_user_seconds_total' && s.value > 0)).toBe(true);
      expect(samples.some((s) => s.name === 'nodejs_heap_size_used_bytes' && s.value > 0)).toBe(true);
      const own = samples.filter((s) => s.name.startsWith('conclave_'));
      expect(own.length).toBeGreaterThan(0);
      for (const s of own) {
        expect(s.labels['service']).toBe(name);
        for (const v of Object.values(s.labels)) {
          expect(ulid.test(v.toUpperCase())).toBe(false);
          expect(ids.some((id) => v.includes(id))).toBe(false);
          // Nor the run's prefix: subjects are labelled without it.
          expect(v.includes(h.run.toLowerCase())).toBe(false);
        }
      }
      const perFamily = new Map<string, number>();
      for (const s of own) perFamily.set(s.name, (perFamily.get(s.name) ?? 0) + 1);
      for (const [family, n] of perFamily) expect([family, n < 100]).toEqual([family, true]);
    }
  });

  it('docs/operations.md describes every series with its type and labels', () => {
    const doc = readFileSync(join(__dirname, '../../docs/operations.md'), 'utf8');
    for (const def of Object.values(METRICS)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${def.name}\` |`));
      expect([def.name, row?.split('|')[2]?.trim()]).toEqual([def.name, def.type]);
      expect([def.name, row?.split('|')[3]?.trim()]).toEqual([def.name, def.labels.map((l) => `\`${l}\``).join(', ')]);
    }
  });

  it('the dashboard and the alert rules query only series the services expose; every alert has a runbook', () => {
    const dir = join(__dirname, '../../deploy/observability');
    const known = new Set<string>();
    for (const def of Object.values(METRICS)) {
      known.add(def.name);
      if (def.type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) known.add(def.name + suffix);
    }
    const dashboard = JSON.parse(readFileSync(join(dir, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    const rules = readFileSync(join(dir, 'alerts.yml'), 'utf8');
    const used = new Set([...exprs.join('\n').matchAll(/conclave_[a-z_]+/g), ...rules.matchAll(/conclave_[a-z_]+/g)].map((m) => m[0]));
    for (const name of used) expect([name, known.has(name)]).toEqual([name, true]);
    const doc = readFileSync(join(__dirname, '../../docs/operations.md'), 'utf8');
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    for (const alert of alerts) {
      const anchor = /runbook: docs\/operations\.md#(\w+)/.exec(rules.slice(rules.indexOf(`- alert: ${alert}`)))?.[1];
      expect([
        alert,
        doc.split('\n').some(
          (l) =>
            l.startsWith('### ') &&
            l
              .slice(4)
              .toLowerCase()
              .split(' ')
              .includes(anchor ?? '-'),
        ),
      ]).toEqual([alert, true]);
    }
  });

  (promtool ? it : it.skip)('promtool check rules and test rules accept the alert rules', () => {
    const dir = join(__dirname, '../../deploy/observability');
    for (const args of [
      ['check', 'rules', 'alerts.yml'],
      ['test', 'rules', 'alerts.test.yml'],
    ]) {
      const run = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
      expect({ args, status: run.status, problems: run.status === 0 ? '' : `${run.stdout}${run.stderr}` }).toEqual({
        args,
        status: 0,
        problems: '',
      });
    }
  });

  (promtool ? it : it.skip)('promtool check metrics accepts every exposition', () => {
    for (const name of services) {
      const run = spawnSync('promtool', ['check', 'metrics'], { input: scraped.get(name)!.text, encoding: 'utf8' });
      expect({ service: name, status: run.status, problems: `${run.stdout}${run.stderr}`.trim() }).toEqual({
        service: name,
        status: 0,
        problems: '',
      });
    }
  });
});
