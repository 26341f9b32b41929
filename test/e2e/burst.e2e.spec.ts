import { acpStreamNames } from '@conclave/messaging';
import { ConclaveClient } from '@conclave/sdk';
import { connect, NatsConnection } from 'nats';
import { ConclaveHarness, eventually, NATS_URL, ServiceName } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';
import { checkRun, describeReport, noViolations, runNamesOf, violationCounts } from '../support/invariants';
import { LoadAgent, pool, ProposalOutcome, ProposalPlan } from '../support/load-agent';
import { parseExposition, type Sample, sumOf } from '../support/metrics-text';
import { ServiceProcesses } from '../support/processes';

/**
 * No decision lost or stale under a burst: an outside agent posts proposals with quorum 3, 32 in
 * flight, each followed at once by three concurrent responses (two endorse, one challenge), in
 * several bursts. Every proposal must get exactly one decision without any restart, and the
 * whole log must pass the invariant checker.
 */
const BURSTS = 4;
const PER_BURST = 500;
/** The load takes most of it on a busy 2-core machine; the bound only stops a run that hangs. */
const TEST_TIMEOUT_MS = 300_000;
const IN_FLIGHT = 32;

const plan: ProposalPlan = {
  domain: 'burst.test',
  quorum: 3,
  responses: [
    { participant_id: 'voter-a', response_type: 'endorse' },
    { participant_id: 'voter-b', response_type: 'endorse' },
    { participant_id: 'voter-c', response_type: 'challenge' },
  ],
};

/** The running system as the agent and the checker see it. */
interface System {
  nc: NatsConnection;
  client: ConclaveClient;
  prefix: string;
  env: Record<string, string>;
  services: string;
  /** The base URL of every service's HTTP server (its /metrics). */
  metricsUrls: () => Promise<string[]>;
}

/** Every service's /metrics, read together. */
async function scrapeAll(h: System): Promise<Sample[][]> {
  return Promise.all(
    (await h.metricsUrls()).map(async (url) => {
      const res = await fetch(`${url}/metrics`);
      if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
      return parseExposition(await res.text());
    }),
  );
}

/**
 * What the services' metrics say of the burst, across every replica: each decision counted once
 * (by the replica that recorded it), each request and refusal counted by the intake that answered
 * it, and, once the load is over, nothing left pending, lagging or in flight.
 */
async function metricsAfter(h: System, agent: LoadAgent, proposals: number): Promise<void> {
  const settled = (scrapes: Sample[][]) =>
    scrapes.every((samples) =>
      samples
        .filter((s) =>
          ['conclave_reactor_lag_events', 'conclave_outbox_pending_messages', 'conclave_acp_pending_proposals'].includes(s.name),
        )
        .every((s) => s.value === 0),
    );
  const scrapes = await eventually(
    async () => {
      const s = await scrapeAll(h);
      return settled(s) ? s : undefined;
    },
    30_000,
    'every reactor caught up, no outbox message in flight, no proposal pending',
  );
  const total = (metric: string, labels: Record<string, string> = {}) => scrapes.reduce((sum, s) => sum + sumOf(s, metric, labels), 0);
  const answered = (command: string, code?: string) =>
    agent.attempts.filter(
      (a) => a.command === command && a.reply !== undefined && (code === undefined || (!a.reply.ok && a.reply.error.code === code)),
    ).length;
  const sent = (command: string) => agent.attempts.filter((a) => a.command === command).length;

  expect({
    decisions: total('conclave_acp_decisions_total'),
    approvedByQuorum: total('conclave_acp_decisions_total', { outcome: 'approved', trigger: 'quorum' }),
    timedFromQuorum: total('conclave_acp_quorum_to_decision_seconds_count'),
  }).toEqual({ decisions: proposals, approvedByQuorum: proposals, timedFromQuorum: proposals });
  // An attempt that got no reply may or may not have reached an intake.
  for (const command of ['propose', 'respond']) {
    const counted = total('conclave_api_requests_total', { subject: `v1.${command}` });
    expect([command, counted >= answered(command) && counted <= sent(command)]).toEqual([command, true]);
    expect([command, total('conclave_api_request_duration_seconds_count', { subject: `v1.${command}` })]).toEqual([command, counted]);
    const codes = new Set(agent.attempts.flatMap((a) => (a.command === command && a.reply && !a.reply.ok ? [a.reply.error.code] : [])));
    for (const code of codes) {
      const refused = total('conclave_api_errors_total', { subject: `v1.${command}`, code });
      expect([command, code, refused >= answered(command, code)]).toEqual([command, code, true]);
    }
  }
}

async function burst(h: System): Promise<void> {
  // Given the services (started by the caller) and an agent
  const decisions = new DecisionCollector(h.client);
  // Every command must be answered: a slow reply on a loaded CI machine is still an answer.
  const agent = new LoadAgent(() => h.nc, { prefix: h.prefix, timeoutMs: 20_000 });

  // When it posts the bursts; a short quiet gap between them, so each starts from idle services
  const outcomes: ProposalOutcome[] = [];
  for (let b = 0; b < BURSTS; b++) {
    outcomes.push(...(await pool(Array.from({ length: PER_BURST }), IN_FLIGHT, (_, i) => agent.post(plan, b * PER_BURST + i))));
    await new Promise((r) => setTimeout(r, 200));
  }
  const ids = outcomes.map((o) => o.proposal_id);
  const decided = () => new Set(decisions.received.map((d) => d.proposal_id));
  // A decision follows quorum within milliseconds; the bound only ends a run whose proposals never decide.
  await eventually(
    async () => (ids.every((id) => decided().has(id)) ? true : undefined),
    60_000,
    `a decision for each of ${ids.length} proposals`,
  ).catch(() => undefined);

  // Then every command was accepted, every proposal decided once, approved by quorum, and the log is sound
  const report = await checkRun(h.nc, runNamesOf(h.env), { attempts: agent.attempts });
  const undecided = ids.filter((id) => !decided().has(id));
  const perProposal = new Map<string, number>();
  for (const d of decisions.received) perProposal.set(d.proposal_id, (perProposal.get(d.proposal_id) ?? 0) + 1);
  if (!report.ok || undecided.length > 0) {
    console.warn(
      `burst over ${h.services}: ${undecided.length} of ${ids.length} proposals undecided (first: ${undecided.slice(0, 5).join(', ')})\n${describeReport(report)}`,
    );
  }

  expect(outcomes.filter((o) => !o.proposed || o.responded !== 3).map((o) => `${o.proposal_id}: ${o.refusals.join(',')}`)).toEqual([]);
  expect({ undecided: undecided.length, stuck: report.stuck.length }).toEqual({ undecided: 0, stuck: 0 });
  expect(ids.filter((id) => perProposal.get(id) !== 1)).toEqual([]);
  expect(decisions.received.filter((d) => d.outcome !== 'approved' || d.trigger !== 'quorum')).toEqual([]);
  expect(violationCounts(report)).toEqual(noViolations());
  expect(report.counts).toMatchObject({ proposals: ids.length, pending: 0, terminalEvents: ids.length, decisionMessages: ids.length });
  await metricsAfter(h, agent, ids.length);
}

describe('burst: every proposal with its quorum of concurrent responses is decided exactly once, with no restart', () => {
  const inProcess = (services: ServiceName[]) => {
    const h = new ConclaveHarness();
    afterAll(() => h.stop());
    return async () => {
      await h.start(...services);
      await burst({
        nc: h.nc,
        client: h.client,
        prefix: h.prefix,
        env: h.env,
        services: services.join(', '),
        metricsUrls: () => Promise.all(h.instances.map(async (i) => (await i.app.getUrl()).replace('[::1]', '127.0.0.1'))),
      });
    };
  };

  describe('one replica of each service, in process', () => {
    it(
      `given intake, resolver and sweeper, when ${BURSTS * PER_BURST} proposals get 3 concurrent responses each in ${BURSTS} bursts, then each has exactly one decision and no invariant is violated`,
      inProcess(['intake', 'resolver', 'sweeper']),
      TEST_TIMEOUT_MS,
    );
  });

  describe('two intake and two resolver replicas, in process', () => {
    it(
      `given two intakes, two resolvers and a sweeper, when ${BURSTS * PER_BURST} proposals get 3 concurrent responses each in ${BURSTS} bursts, then each has exactly one decision and no invariant is violated`,
      inProcess(['intake', 'intake', 'resolver', 'resolver', 'sweeper']),
      TEST_TIMEOUT_MS,
    );
  });

  describe('one replica of each service, each its own process (as npm run up runs them)', () => {
    let svc: ServiceProcesses | undefined;
    let nc: NatsConnection | undefined;
    afterAll(async () => {
      await svc?.stop().catch(() => undefined);
      if (nc && svc) {
        const jsm = await nc.jetstreamManager();
        const run = svc.run;
        const s = acpStreamNames(run);
        for (const name of [
          `EVT_${run}`,
          s.decisions,
          s.proposals,
          s.escalations,
          s.councilDecisions,
          `KV_EVT_${run}_CHECKPOINTS`,
          `EVT_${run}_REJECTIONS`,
          `KV_EVT_${run}_NONCES`,
        ]) {
          await jsm.streams.delete(name).catch(() => undefined);
        }
        await nc.drain();
      }
    });

    it(
      `given intake, resolver and sweeper as processes, when ${BURSTS * PER_BURST} proposals get 3 concurrent responses each in ${BURSTS} bursts, then each has exactly one decision and no invariant is violated`,
      async () => {
        svc = new ServiceProcesses(NATS_URL);
        await svc.start('intake', 'resolver', 'sweeper');
        nc = await connect({ servers: NATS_URL });
        const client = await ConclaveClient.connect({ nc, prefix: svc.prefix, streamSuffix: svc.run });
        const processes = svc.processes;
        await burst({
          nc,
          client,
          prefix: svc.prefix,
          env: svc.env,
          services: 'intake, resolver, sweeper (processes)',
          metricsUrls: async () => processes.map((p) => `http://127.0.0.1:${p.port}`),
        });
      },
      TEST_TIMEOUT_MS,
    );
  });
});
