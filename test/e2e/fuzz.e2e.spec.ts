import { mkdirSync, writeFileSync } from 'node:fs';
import { AUDIT_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, CouncilClient, ed25519Signer } from '@conclave/sdk';
import { scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { ConclaveHarness, eventually, SecureConclaveHarness, ServiceName } from '../support/conclave-harness';
import { formatReport, FuzzReport, Fuzzer, setLearner } from '../support/fuzz';
import type { FuzzWorld } from '../support/fuzz-inputs';

/**
 * The fuzzer over the running system (in-process services, real NATS): generated inputs on every
 * NATS request subject and HTTP route, with authentication off and on. Each reply must be a
 * typed error or a valid success, no input that got an error may leave an event in the log, and
 * afterwards every service still answers a valid request and reports ready.
 *
 * FUZZ_RUNS is the number of inputs per authentication mode (1,000 here, 2,000 in all; `npm run
 * test:fuzz` sends 50,000 per mode), FUZZ_SEED replays a run, FUZZ_CONCURRENCY sets how many are in
 * flight at once (the log is checked per batch of that size).
 */
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 1_000);
const SEED = Number(process.env['FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const CONCURRENCY = Number(process.env['FUZZ_CONCURRENCY'] ?? 16);
const SERVICES: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit'];
const HUMAN_TOKEN = 'fz-human-token-0123456789abcdef-0123456789';
const MAX_PAYLOAD = 65_536;
const now = () => new Date().toISOString();

/** How long one mode may take: generous per input, never a measured duration under test. */
const timeoutFor = (runs: number) => 120_000 + runs * 100;

describe.each([
  ['authentication off', false],
  ['authentication on', true],
])('fuzz: every NATS subject and HTTP route, %s', (mode, secure) => {
  const env = {
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({ [HUMAN_TOKEN]: 'fz-human' }),
    CONCLAVE_MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD),
    LOG_LEVEL: process.env['CONCLAVE_TEST_LOG_LEVEL'] ?? 'error',
  };
  const h: ConclaveHarness = secure ? new SecureConclaveHarness(env) : new ConclaveHarness(env);
  const s = h as SecureConclaveHarness;
  const world: FuzzWorld = {
    now: Date.now(),
    authRequired: secure,
    proposalIds: [],
    escalatedIds: [],
    runIds: [],
    agents: ['fz-alice', 'fz-bob'],
    humans: ['fz-human'],
    owner: 'fz-owner',
    registryIds: ['fzr-one', 'fzr-two'],
    humanTokens: [HUMAN_TOKEN],
    domains: ['fuzz', 'fuzz.a', 'fuzz.b.c'],
    maxPayloadBytes: MAX_PAYLOAD,
  };
  let report: FuzzReport;
  // Patient clients: on a loaded machine a slow reply is not a service that stopped answering.
  const as = (who: string): Promise<ConclaveClient> =>
    ConclaveClient.connect({
      nc: h.nc,
      prefix: h.prefix,
      streamSuffix: h.run,
      timeoutMs: 30_000,
      ...(secure ? { signer: ed25519Signer(who, s.keys.get(who)?.privateKeyPem ?? '') } : {}),
    });
  const council = () =>
    new CouncilClient(
      h.nc,
      h.env['CONCLAVE_COUNCIL_PREFIX'],
      secure ? { timeoutMs: 30_000, signer: ed25519Signer('fz-owner', s.keys.get('fz-owner')!.privateKeyPem) } : { timeoutMs: 30_000 },
    );

  beforeAll(async () => {
    await h.start(...SERVICES);
    if (secure) {
      const grants = [{ domain: 'fuzz', domain_authority: 0.8, trust_score: 0.8 }];
      await s.seed([
        { participant_id: 'fz-alice', clearance: 'restricted', grants },
        { participant_id: 'fz-bob', grants },
        { participant_id: 'fz-owner', grants: [...grants, { domain: 'general', domain_authority: 0.8, trust_score: 0.8 }] },
        ...['fz-m1', 'fz-m2', 'fz-chair'].map((participant_id) => ({ participant_id })),
        { participant_id: 'fz-human', roles: ['human-resolver'], grants: [{ ...grants[0], actions: ['resolve'] }] },
      ]);
    }
    // Given a few proposals (pending, escalated) and a council run to aim at.
    const alice = await as('fz-alice');
    for (const domain of world.domains) {
      const p = await alice.propose({ domain, author: 'fz-alice', payload: { n: 1 }, quorum: 3, created_at: now() });
      world.proposalIds.push(p.proposal_id);
    }
    const escalated = await alice.escalate(world.proposalIds[0], { reason: 'fuzz target', requested_by: 'fz-alice' });
    world.escalatedIds.push(escalated.proposal_id);
    world.runIds.push(
      await council().start({
        goal_contract: scriptedGoalContract({ decision_owner: 'fz-owner' }),
        panel: scriptedPanel({ proposers: ['fz-m1', 'fz-m2'], chair: 'fz-chair' }),
        policy: { stage_timeout_ms: 200 },
      }),
    );
  });
  afterAll(async () => {
    setLearner(undefined);
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  it(
    `${RUNS} inputs: every reply is a typed error or a valid success; no input that got an error appends an event`,
    async () => {
      // When the fuzzer sends its inputs, CONCURRENCY at a time.
      const fuzzer = new Fuzzer(h, world);
      setLearner(fuzzer);
      mkdirSync('.data', { recursive: true });
      const file = `.data/fuzz-${secure ? 'auth-on' : 'auth-off'}${process.env['FUZZ_REPORT_SUFFIX'] ?? ''}.txt`;
      const title = `${mode}, seed ${SEED}, ${CONCURRENCY} in flight`;
      report = await fuzzer.run({
        runs: RUNS,
        seed: SEED,
        concurrency: CONCURRENCY,
        // Generous: on a loaded machine a slow reply is not a service that stopped answering.
        timeoutMs: 30_000,
        keys: secure ? s.keys : undefined,
        progress: (r) => writeFileSync(file, formatReport(`${title} (running)`, r) + '\n'),
      });
      const table = formatReport(title, report);
      console.log(table);
      writeFileSync(file, table + '\n');
      if (process.env['FUZZ_PROFILE'])
        console.log(
          [...fuzzer.spent.entries()]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 25)
            .map(([k, ms]) => `${k}: ${ms.toFixed(0)} ms in all, slowest ${fuzzer.slowest.get(k)!.toFixed(0)} ms`)
            .join('\n'),
        );
      // Then nothing but typed errors and valid successes, and the log never moved for an error.
      expect(report.others).toEqual([]);
      expect(report.total.other).toBe(0);
      expect(report.logViolations).toEqual([]);
      expect(report.total.inputs + report.unsendable).toBe(RUNS);
      // And every family reached the services (the client library refuses only a few oversized ones).
      expect(report.unsendable).toBeLessThan(RUNS * 0.05);
      expect(report.total.typed).toBeGreaterThan(0);
      expect(report.total.success).toBeGreaterThan(0);
    },
    timeoutFor(RUNS),
  );

  it('afterwards every service still answers a valid request, decides, expires, and /readyz is 200', async () => {
    const alice = await as('fz-alice');
    const bob = await as('fz-bob');
    const human = await as('fz-human');
    // intake: a proposal is accepted and read back
    const quorum = await alice.propose({ domain: 'fuzz', author: 'fz-alice', payload: { after: 'fuzz' }, quorum: 1, created_at: now() });
    expect((await alice.get(quorum.proposal_id)).status).toBe('pending');
    // resolver: its quorum is met, it resolves
    await bob.endorse(quorum.proposal_id, {
      participant_id: 'fz-bob',
      confidence: 0.9,
      ...(secure ? {} : { domain_authority: 0.8, trust_score: 0.8 }),
    });
    await eventually(async () => ((await alice.get(quorum.proposal_id)).status === 'resolved' ? true : undefined), 20_000, 'resolution');
    // sweeper: a proposal past expires_at expires
    const expiring = await alice.propose({
      domain: 'fuzz',
      author: 'fz-alice',
      payload: {},
      quorum: 2,
      created_at: now(),
      expires_at: new Date(Date.now() + 1_000).toISOString(),
    });
    await eventually(async () => ((await alice.get(expiring.proposal_id)).status === 'expired' ? true : undefined), 20_000, 'expiry');
    // escalation: an escalated proposal is resolved by a human, over NATS and listed over HTTP
    const escalate = await alice.propose({ domain: 'fuzz', author: 'fz-alice', payload: {}, quorum: 3, created_at: now() });
    await alice.escalate(escalate.proposal_id, { reason: 'after the fuzz', requested_by: 'fz-alice' });
    await eventually(
      async () => ((await human.escalations()).some((e) => e.proposal_id === escalate.proposal_id) ? true : undefined),
      20_000,
      'inbox',
    );
    const resolved = await human.resolve(escalate.proposal_id, { outcome: 'approved', resolved_by: 'fz-human', note: 'checked' });
    expect(resolved.status).toBe('resolved');
    const escalationUrl = (await h.instances.find((i) => i.name === 'escalation')!.app.getUrl()).replace('[::1]', '127.0.0.1');
    // The fuzz spent the human's request budget on this route: 429 (rate limited) until it refills.
    await eventually(
      async () =>
        (await fetch(`${escalationUrl}/escalations`, { headers: { authorization: `Bearer ${HUMAN_TOKEN}` } })).status === 200
          ? true
          : undefined,
      60_000,
      'GET /escalations 200 once the rate limit refills',
    );
    // council: the first run is read back
    expect((await council().get(world.runIds[0])).run_id).toBe(world.runIds[0]);
    // audit: the head of the chain
    const head = await (await as('admin')).call(AUDIT_PATTERNS.head, {});
    expect(head).toBeDefined();
    // every instance: ready
    for (const i of h.instances) {
      const url = (await i.app.getUrl()).replace('[::1]', '127.0.0.1');
      const res = await fetch(`${url}/readyz`);
      expect({ service: i.name, status: res.status }).toEqual({ service: i.name, status: 200 });
    }
  }, 90_000);
});
