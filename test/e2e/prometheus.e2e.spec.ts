import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConclaveHarness, eventually, ServiceName } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const prometheusInstalled = spawnSync('prometheus', ['--version']).status === 0;
const d = prometheusInstalled ? describe : describe.skip;
const title = `prometheus: a real server scrapes every service${prometheusInstalled ? '' : ' (skipped: the prometheus binary is not installed)'}`;

const ALERTS = join(__dirname, '..', '..', 'deploy', 'observability', 'alerts.yml');

/** A port nothing listens on now (the kernel's pick, released at once). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * Debian's `prometheus`, on a loopback port with a generated configuration, scrapes the
 * /metrics of every service of an in-process deployment and loads the repository's alert rules.
 * Asked through its HTTP API, as a dashboard or an SRE would: every target is up, the decisions
 * the tests caused (Appendix C among them) are counted by outcome and trigger, the latency
 * histograms and reactor positions moved, and every alert rule is loaded and healthy.
 */
d(title, () => {
  const h = new ConclaveHarness();
  const services: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit'];
  const dir = mkdtempSync(join(tmpdir(), 'conclave-prometheus-'));
  let prometheus: ChildProcess | undefined;
  let api = '';
  const output: string[] = [];

  const query = async (promql: string): Promise<VectorSample[]> => {
    const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as { status: string; data: { resultType: string; result: VectorSample[] } };
    expect(body.status).toBe('success');
    return body.data.result;
  };

  /** The value of a one-sample query once scrapes have brought it to `expected` (what it read last, else). */
  const scalarOnceScraped = async (promql: string, expected: string): Promise<string | undefined> => {
    let last: string | undefined;
    await eventually(
      async () => {
        last = (await query(promql))[0]?.value[1];
        return last === expected ? last : undefined;
      },
      20_000,
      `${promql} to read ${expected}`,
    ).catch(() => undefined);
    return last;
  };

  beforeAll(async () => {
    await h.start(...services);
    const targets: { service: ServiceName; address: string }[] = [];
    for (const i of h.instances) targets.push({ service: i.name, address: new URL(await i.app.getUrl()).host });
    const config = {
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [ALERTS],
      scrape_configs: [
        {
          job_name: 'conclave',
          metrics_path: '/metrics',
          static_configs: targets.map((t) => ({ targets: [t.address], labels: { target: t.service } })),
        },
      ],
    };
    // JSON is YAML: no YAML writer needed.
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-lifecycle',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
    prometheus.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
    await eventually(
      async () => {
        if (prometheus?.exitCode !== null) throw new Error(`prometheus exited: ${output.join('').slice(-2_000)}`);
        return (await fetch(`${api}/-/ready`).catch(() => undefined))?.ok ? true : undefined;
      },
      30_000,
      'prometheus to be ready',
    );
  }, 90_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus?.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('given every service running, when prometheus scrapes them, `up` is 1 for each target', async () => {
    const up = await eventually(
      async () => {
        const samples = await query('up{job="conclave"}');
        return samples.length === services.length && samples.every((s) => s.value[1] === '1') ? samples : undefined;
      },
      20_000,
      'every target up',
    );
    expect(up.map((s) => s.metric['target']).sort()).toEqual([...services].sort());
  });

  it('given two approvals and a rejection by quorum, the decision counters read 2 and 1 through the query API', async () => {
    const decisions = new DecisionCollector(h.client, { domain: 'prom.>' });
    const now = () => new Date().toISOString();
    const vote = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };
    const ids: string[] = [];
    for (const [domain, respond] of [
      ['prom.a', 'endorse'],
      ['prom.b', 'endorse'],
      ['prom.c', 'challenge'],
    ] as const) {
      const p = await h.client.propose({ domain, author: 'agent-prom', payload: { n: ids.length }, quorum: 1, created_at: now() });
      await h.client[respond](p.proposal_id, { participant_id: 'agent-voter', ...vote });
      ids.push(p.proposal_id);
    }
    for (const id of ids) await decisions.waitFor(id);

    const byOutcome = await eventually(
      async () => {
        const samples = await query('sum by (outcome, trigger) (conclave_acp_decisions_total)');
        const read = Object.fromEntries(samples.map((s) => [`${s.metric['outcome']}/${s.metric['trigger']}`, s.value[1]]));
        return read['approved/quorum'] === '2' && read['rejected/quorum'] === '1' ? read : undefined;
      },
      20_000,
      'the decision counters scraped',
    );
    expect(byOutcome).toEqual({ 'approved/quorum': '2', 'rejected/quorum': '1' });
    // The quorum-to-decision histogram observed the same three, in the resolver.
    expect(await scalarOnceScraped('sum(conclave_acp_quorum_to_decision_seconds_count{service="resolver"})', '3')).toBe('3');
  });

  it('given the four scenarios of Appendix C and the human resolution of C.4, when scraped, then their decisions are counted by outcome and trigger, the latency histograms observed them and every proposal reactor moved, with its lag reported', async () => {
    const reactors = ['proposal-index', 'resolver', 'sweeper', 'escalation-inbox', 'audit'];
    const positions = async () =>
      Object.fromEntries(
        (await query(`conclave_reactor_position{reactor=~"${reactors.join('|')}"}`)).map((s) => [s.metric['reactor'], Number(s.value[1])]),
      );
    const before = await eventually(
      async () => {
        const p = await positions();
        return reactors.every((r) => r in p) ? p : undefined;
      },
      20_000,
      'the reactor positions scraped',
    );
    // Given: Appendix C, as test/e2e/appendix-c.e2e.spec.ts runs it, and a human for the tie.
    const decisions = new DecisionCollector(h.client, { domain: 'appc.>' });
    const now = () => new Date().toISOString();
    const propose = (domain: string, quorum: number, expiresInMs?: number) =>
      h.client.propose({
        domain: `appc.${domain}`,
        author: 'agent-author',
        payload: { domain },
        quorum,
        created_at: now(),
        ...(expiresInMs === undefined ? {} : { expires_at: new Date(Date.now() + expiresInMs).toISOString() }),
      });
    const vote = (domain_authority: number, confidence: number, trust_score: number) => ({ domain_authority, confidence, trust_score });
    const c1 = await propose('risk', 2);
    await h.client.endorse(c1.proposal_id, { participant_id: 'agent-a', ...vote(0.9, 0.85, 0.9) });
    await h.client.endorse(c1.proposal_id, { participant_id: 'agent-b', ...vote(0.8, 0.7, 0.85) });
    const c2 = await propose('ops', 2);
    await h.client.challenge(c2.proposal_id, { participant_id: 'senior', ...vote(0.95, 0.9, 0.95) });
    await h.client.endorse(c2.proposal_id, { participant_id: 'junior', ...vote(0.4, 0.6, 0.7) });
    const c3 = await propose('finance', 3, 1_500);
    await h.client.endorse(c3.proposal_id, { participant_id: 'agent-a', ...vote(0.8, 0.75, 0.9) });
    const c4 = await propose('pricing', 2);
    await h.client.endorse(c4.proposal_id, { participant_id: 'agent-a', ...vote(0.9, 0.8, 0.9) });
    await h.client.challenge(c4.proposal_id, { participant_id: 'agent-b', ...vote(0.9, 0.8, 0.9) });
    await decisions.waitFor(c4.proposal_id);
    await h.client.resolve(c4.proposal_id, { outcome: 'approved', resolved_by: 'human-pricing-lead', note: 'a human decides the tie' });
    for (const p of [c1, c2, c3]) await decisions.waitFor(p.proposal_id);
    await decisions.waitFor(c4.proposal_id, 2);

    // Then: the outcomes no other test of this file causes are counted exactly, the others at least once.
    const byOutcome = await eventually(
      async () => {
        const samples = await query('sum by (outcome, trigger) (conclave_acp_decisions_total)');
        const read = Object.fromEntries(samples.map((s) => [`${s.metric['outcome']}/${s.metric['trigger']}`, Number(s.value[1])]));
        return ['approved/timeout', 'escalated/quorum', 'approved/manual'].every((k) => read[k] === 1) ? read : undefined;
      },
      20_000,
      'the Appendix C decisions scraped',
    );
    expect(byOutcome).toMatchObject({
      'approved/timeout': 1,
      'escalated/quorum': 1,
      'approved/manual': 1,
      'approved/quorum': expect.any(Number),
      'rejected/quorum': expect.any(Number),
    });
    // C.3's expiry, in the sweeper's histogram (scraped with the counter or soon after it).
    expect(await scalarOnceScraped('sum(conclave_acp_expiry_lateness_seconds_count)', '1')).toBe('1');

    // The latency histograms observed each request and append (a request is observed as it is
    // answered, after its append counted the decision: so each is waited for on its own).
    const counts = async (promql: string) => Object.fromEntries((await query(promql)).map((s) => [s.metric['key'], Number(s.value[1])]));
    const requests = await eventually(
      async () => {
        const c = await counts(
          'label_join(sum by (service, subject) (conclave_api_request_duration_seconds_count), "key", "/", "service", "subject")',
        );
        return c['intake/v1.propose'] >= 4 && c['intake/v1.respond'] >= 7 && c['escalation/v1.resolve'] >= 1 ? c : undefined;
      },
      20_000,
      'the request latency histograms scraped',
    );
    expect(requests['escalation/v1.resolve']).toBe(1);
    const appends = await eventually(
      async () => {
        const c = await counts(
          'label_join(sum by (service, category) (conclave_eventlog_append_duration_seconds_count), "key", "/", "service", "category")',
        );
        return ['intake/proposal', 'resolver/proposal', 'sweeper/proposal', 'escalation/proposal'].every((k) => c[k] >= 1) ? c : undefined;
      },
      20_000,
      'the append latency histograms scraped',
    );
    expect(appends['sweeper/proposal']).toBe(1);

    // Every reactor that follows proposals moved past where it was, and reports its lag.
    const after = await eventually(
      async () => {
        const p = await positions();
        return reactors.every((r) => p[r] > before[r]) ? p : undefined;
      },
      20_000,
      'every proposal reactor to move',
    );
    expect(Object.keys(after).sort()).toEqual([...reactors].sort());
    const lag = await query(`conclave_reactor_lag_events{reactor=~"${reactors.join('|')}"}`);
    expect(lag.map((s) => s.metric['reactor']).sort()).toEqual([...reactors].sort());
    for (const s of lag) expect(Number(s.value[1])).toBeGreaterThanOrEqual(0);
  });

  it("the dashboard's service picker offers every service, as Grafana asks Prometheus for it", async () => {
    const dashboard = JSON.parse(
      readFileSync(join(__dirname, '..', '..', 'deploy', 'observability', 'grafana-dashboard.json'), 'utf8'),
    ) as {
      templating: { list: { name: string; query?: string }[] };
    };
    const picker = dashboard.templating.list.find((v) => v.name === 'service')?.query ?? '';
    // label_values(<selector>, <label>): Grafana's query for a variable's values.
    const [, selector, label] = /^label_values\((.+), (\w+)\)$/.exec(picker) ?? [];
    expect(label).toBe('service');
    const offered = await eventually(
      async () => {
        const res = await fetch(`${api}/api/v1/label/${label}/values?match[]=${encodeURIComponent(selector)}`);
        const values = ((await res.json()) as { data: string[] }).data;
        return services.every((s) => values.includes(s)) ? values : undefined;
      },
      20_000,
      'every service among the values',
    );
    expect([...offered].sort()).toEqual([...services].sort());
  });

  it("loads the repository's alert rules: every alert of alerts.yml, healthy", async () => {
    const expected = [...readFileSync(ALERTS, 'utf8').matchAll(/^\s*- alert: (\S+)\s*$/gm)].map((m) => m[1]);
    expect(expected.length).toBeGreaterThan(0);
    const rules = await eventually(
      async () => {
        const res = await fetch(`${api}/api/v1/rules?type=alert`);
        const body = (await res.json()) as { data: { groups: { file: string; rules: { name: string; health: string }[] }[] } };
        const loaded = body.data.groups.flatMap((g) => g.rules);
        // Healthy once each rule was evaluated at least once ('unknown' before that).
        return loaded.length === expected.length && loaded.every((r) => r.health === 'ok') ? body.data.groups : undefined;
      },
      20_000,
      'the alert rules loaded and evaluated',
    );
    expect(rules.flatMap((g) => g.rules.map((r) => r.name)).sort()).toEqual([...expected].sort());
    expect(rules.every((g) => g.file === ALERTS)).toBe(true);
  });
});
