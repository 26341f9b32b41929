import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, NatsConnection } from 'nats';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ConclaveError, ed25519Signer, generateParticipantKeys, ParticipantKeyPair, provisionFeed } from '@conclave/sdk';
import { DecisionCollector } from '../support/decisions';
import { ComposeStack, detectEngine, Engine, ROOT, run } from './compose-stack';

/**
 * docker-compose.yml run for real: the images deploy/images/build.sh builds, NATS with accounts,
 * every service with CONCLAVE_AUTH_MODE=required, the Appendix C scenarios posted from the host
 * through the SDK (each agent logged in to NATS as `agent`, signing as its registered participant),
 * a service container stopped and started again, and the stack torn down.
 */
const SERVICES = ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit'] as const;
const { engine, reason } = detectEngine();
const describeWithEngine = engine ? describe : describe.skip;
const title = engine
  ? `the compose stack on ${engine.name}: images built, every healthcheck green, Appendix C from the host, a restart`
  : `the compose stack (skipped: no container engine can run here: ${reason})`;

// Letters and digits, starting with a letter: the accounts config parses the value as a token.
const password = () => `p${randomBytes(12).toString('hex')}`;
const now = () => new Date().toISOString();

describeWithEngine(title, () => {
  // Only called where an engine was found.
  const eng = engine as Engine;
  const work = join(ROOT, '.data', 'ops');
  const project = `conclave-ops-${process.pid}`;
  const ports = { nats: 24222, monitor: 28222, http: 28081 };
  const passwords = {
    CONCLAVE_SERVICES_PASSWORD: password(),
    CONCLAVE_AGENT_PASSWORD: password(),
    CONCLAVE_READER_PASSWORD: password(),
    CONCLAVE_HUMAN_PASSWORD: password(),
    NATS_SYS_PASSWORD: password(),
  };
  const admin = generateParticipantKeys();
  const keys = new Map<string, ParticipantKeyPair>([['admin', admin]]);
  // The council service's own key, mounted into its container as a compose secret.
  const councilKey = generateParticipantKeys();
  const councilKeyFile = join(work, 'council-service.pem');
  const BRIDGE_DOMAINS = 'billing,ops.deploy';
  const natsUrl = `nats://127.0.0.1:${ports.nats}`;
  const connections: NatsConnection[] = [];
  let adminClient: ConclaveClient;
  const clients = new Map<string, ConclaveClient>();
  const readyMs: Record<string, number> = {};
  let stack: ComposeStack;
  let decisions: DecisionCollector;

  /** A NATS connection as one of the users of deploy/nats/nats-accounts.conf, with its inbox prefix. */
  async function natsAs(user: 'conclave-services' | 'agent' | 'reader' | 'human', pass: string): Promise<NatsConnection> {
    const nc = await connect({ servers: natsUrl, user, pass, inboxPrefix: `_INBOX_${user}` });
    connections.push(nc);
    return nc;
  }
  let agentNc: NatsConnection;
  let humanNc: NatsConnection;

  /** A client signing as the participant, over the NATS user its kind logs in as. */
  async function clientFor(participant: string): Promise<ConclaveClient> {
    const existing = clients.get(participant);
    if (existing) return existing;
    const key = keys.get(participant);
    if (!key) throw new Error(`no key for ${participant}`);
    const nc = participant.startsWith('human-') ? humanNc : agentNc;
    const client = await ConclaveClient.connect({ nc, signer: ed25519Signer(participant, key.privateKeyPem) });
    clients.set(participant, client);
    return client;
  }

  beforeAll(async () => {
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    // A bind-mounted file keeps its host owner: readable by all, so that uid 1000 in the container reads it
    // (a throwaway key of this test; docs/operations.md says how to own a real one).
    writeFileSync(councilKeyFile, councilKey.privateKeyPem, { mode: 0o644 });
    // Builds every image (layers cached, so a second run rebuilds only what changed).
    if (process.env['CONCLAVE_OPS_SKIP_BUILD'] !== '1') {
      await run('bash', [join(ROOT, 'deploy/images/build.sh')], eng.env, join(work, 'build.log'));
    }
    stack = new ComposeStack(
      eng,
      project,
      {
        ...passwords,
        CONCLAVE_BOOTSTRAP_ADMIN: `admin=${admin.publicKey}`,
        CONCLAVE_COUNCIL_KEY: councilKeyFile,
        CONCLAVE_COUNCIL_BRIDGE_DOMAINS: BRIDGE_DOMAINS,
        CONCLAVE_NATS_PORT: String(ports.nats),
        CONCLAVE_NATS_MONITOR_PORT: String(ports.monitor),
        ...Object.fromEntries(SERVICES.map((s, i) => [`CONCLAVE_${s.toUpperCase()}_PORT`, String(ports.http + i)])),
      },
      join(work, 'compose.log'),
    );
    await stack.down();
    await stack.up(['nats', ...SERVICES]);
    await stack.waitHealthy('nats', 120_000);
    await Promise.all(
      SERVICES.map(async (s) => {
        const ready = await stack.waitHealthy(s, 180_000);
        readyMs[s] = ready - (await stack.startedAt(s));
      }),
    );
    // Start to ready: from the engine starting the container to its healthcheck's first pass
    // (polled every 250 ms). Printed for docs/operations.md; never asserted.
    console.log(`start-to-ready (ms): ${JSON.stringify(readyMs)}`);

    const admins = await natsAs('conclave-services', passwords.CONCLAVE_SERVICES_PASSWORD);
    agentNc = await natsAs('agent', passwords.CONCLAVE_AGENT_PASSWORD);
    humanNc = await natsAs('human', passwords.CONCLAVE_HUMAN_PASSWORD);
    // Under the accounts config a reader creates no consumer: the operator provisions its feed.
    await provisionFeed(await admins.jetstreamManager(), { stream: 'ACP_DECISIONS', durable: 'feed-reader' });
    // The reader's account (CLIENTS) has no JetStream: it reaches its feed through the API the
    // services' account exports, under the prefix its account imports it as.
    const reader = await ConclaveClient.connect({
      nc: await natsAs('reader', passwords.CONCLAVE_READER_PASSWORD),
      jsApiPrefix: '$JS.conclave.API',
    });
    decisions = new DecisionCollector(reader, { durable: 'feed-reader', bind: true });

    // The registry, as an administrator would set it up (the services' NATS user is the only one
    // the accounts config lets publish registry commands).
    adminClient = await ConclaveClient.connect({ nc: admins, signer: ed25519Signer('admin', admin.privateKeyPem) });
    const seed: Array<{ participant_id: string; roles?: string[]; grants: object[] }> = [
      { participant_id: 'agent-risk-001', grants: [{ domain: 'risk', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-ops', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-fin', grants: [{ domain: 'finance', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      { participant_id: 'agent-pricing', grants: [{ domain: 'strategy', domain_authority: 0.5, trust_score: 0.5, actions: ['propose'] }] },
      {
        participant_id: 'agent-a',
        grants: [
          { domain: 'risk.credit', domain_authority: 0.9, trust_score: 0.9 },
          { domain: 'finance.budget', domain_authority: 0.8, trust_score: 0.9 },
          { domain: 'strategy.pricing', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      {
        participant_id: 'agent-b',
        grants: [
          { domain: 'risk.credit', domain_authority: 0.8, trust_score: 0.85 },
          { domain: 'strategy.pricing', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      { participant_id: 'senior', grants: [{ domain: 'ops.deploy', domain_authority: 0.95, trust_score: 0.95 }] },
      { participant_id: 'junior', grants: [{ domain: 'ops', domain_authority: 0.4, trust_score: 0.7 }] },
      {
        participant_id: 'human-pricing-lead',
        roles: ['human-resolver'],
        grants: [{ domain: 'strategy', domain_authority: 1, trust_score: 1, actions: ['resolve'] }],
      },
    ];
    for (const p of seed) {
      const k = generateParticipantKeys();
      keys.set(p.participant_id, k);
      await adminClient.call(REGISTRY_PATTERNS.register, {
        participant_id: p.participant_id,
        roles: p.roles ?? ['agent'],
        public_key: k.publicKey,
      });
      for (const g of p.grants) await adminClient.call(REGISTRY_PATTERNS.grant, { participant_id: p.participant_id, ...g });
    }
  }, 3_600_000);

  afterAll(async () => {
    for (const c of clients.values()) await c.close().catch(() => undefined);
    for (const nc of connections) await nc.close().catch(() => undefined);
    if (stack) {
      await stack.compose('logs').catch(() => undefined);
      await stack.down();
    }
  }, 300_000);

  it('given the built images, then each service runs as uid 1000 on a read-only root filesystem that it cannot write', async () => {
    for (const s of SERVICES) {
      expect(await stack.engineCmd('image', 'inspect', '--format', '{{.Config.User}}', `conclave/${s}:local`)).toBe('1000:1000\n');
      expect(await stack.inspect(s, '{{.HostConfig.ReadonlyRootfs}}')).toBe('true');
    }
    const intake = await stack.container('intake');
    expect((await stack.engineCmd('exec', intake, 'id', '-u')).trim()).toBe('1000');
    await expect(stack.engineCmd('exec', intake, 'node', '-e', "require('fs').writeFileSync('/app/main.js', '')")).rejects.toThrow(
      /EROFS|read-only/,
    );
  });

  it('given NATS with accounts, then a client without credentials is refused and the agent user may not publish to the event log', async () => {
    await expect(connect({ servers: natsUrl, reconnect: false })).rejects.toThrow(/Authorization|AUTHORIZATION/i);
    // Refused by the accounts config: the JetStream publish gets no acknowledgement.
    await expect(
      agentNc.jetstream().publish('conclave.evt.proposal.forged', new TextEncoder().encode('{}'), { timeout: 2_000 }),
    ).rejects.toThrow();
  });

  it('given the council key as a compose secret, then the council service registered council-service with that key, granted propose and escalate in the bridge domains', async () => {
    const { participant } = await adminClient.call<{ participant: Record<string, any> }>(REGISTRY_PATTERNS.get, {
      participant_id: 'council-service',
    });
    expect(participant).toMatchObject({ status: 'active', roles: ['agent'] });
    expect(participant['keys'].map((k: { public_key: string; status: string }) => [k.public_key, k.status])).toEqual([
      [councilKey.publicKey, 'active'],
    ]);
    expect(
      Object.values(participant['grants'] as Record<string, { domain: string; actions: string[] }>)
        .map((g) => [g.domain, g.actions])
        .sort(),
    ).toEqual(BRIDGE_DOMAINS.split(',').map((d) => [d, ['propose', 'escalate']]));
    // The key is readable inside the container, where CONCLAVE_COUNCIL_KEY_FILE points, and nowhere else.
    const council = await stack.container('council');
    expect((await stack.engineCmd('exec', council, 'sh', '-c', 'printenv CONCLAVE_COUNCIL_KEY_FILE')).trim()).toBe(
      '/run/secrets/council-service-key',
    );
    await expect(stack.engineCmd('exec', await stack.container('intake'), 'ls', '/run/secrets/council-service-key')).rejects.toThrow();
  });

  it('when the Appendix C scenarios are posted from the host, signed, then each decision matches the RFC', async () => {
    // C.1 2-of-3 endorsement
    const c1 = await (
      await clientFor('agent-risk-001')
    ).propose({ domain: 'risk.credit', author: 'agent-risk-001', payload: { action: 'approve_loan' }, quorum: 2, created_at: now() });
    await (await clientFor('agent-a')).endorse(c1.proposal_id, { participant_id: 'agent-a', confidence: 0.85 });
    await (await clientFor('agent-b')).endorse(c1.proposal_id, { participant_id: 'agent-b', confidence: 0.7 });
    expect((await decisions.waitFor(c1.proposal_id))[0]).toMatchObject({
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1.1645,
      votes_against: 0,
    });

    // C.2 weighted domain experts
    const c2 = await (
      await clientFor('agent-ops')
    ).propose({ domain: 'ops.deploy', author: 'agent-ops', payload: { action: 'deploy' }, quorum: 2, created_at: now() });
    await (await clientFor('senior')).challenge(c2.proposal_id, { participant_id: 'senior', confidence: 0.9 });
    await (await clientFor('junior')).endorse(c2.proposal_id, { participant_id: 'junior', confidence: 0.6 });
    expect((await decisions.waitFor(c2.proposal_id))[0]).toMatchObject({
      outcome: 'rejected',
      trigger: 'quorum',
      votes_for: 0.168,
      votes_against: 0.81225,
    });

    // C.3 timeout with partial responses (the sweeper expires it)
    const c3 = await (
      await clientFor('agent-fin')
    ).propose({
      domain: 'finance.budget',
      author: 'agent-fin',
      payload: { action: 'raise_budget' },
      quorum: 3,
      created_at: now(),
      expires_at: new Date(Date.now() + 2_000).toISOString(),
    });
    await (await clientFor('agent-a')).endorse(c3.proposal_id, { participant_id: 'agent-a', confidence: 0.75 });
    expect((await decisions.waitFor(c3.proposal_id, 1, 30_000))[0]).toMatchObject({
      outcome: 'approved',
      trigger: 'timeout',
      votes_for: 0.54,
    });

    // C.4 escalation from tie, then a human resolves it over NATS as the `human` user
    const c4 = await (
      await clientFor('agent-pricing')
    ).propose({ domain: 'strategy.pricing', author: 'agent-pricing', payload: { action: 'raise_price' }, quorum: 2, created_at: now() });
    await (await clientFor('agent-a')).endorse(c4.proposal_id, { participant_id: 'agent-a', confidence: 0.8 });
    await (await clientFor('agent-b')).challenge(c4.proposal_id, { participant_id: 'agent-b', confidence: 0.8 });
    expect((await decisions.waitFor(c4.proposal_id))[0]).toMatchObject({ outcome: 'escalated', votes_for: 0.648, votes_against: 0.648 });
    const lead = await clientFor('human-pricing-lead');
    const resolution = { outcome: 'approved' as const, resolved_by: 'human-pricing-lead', note: 'Pricing change approved after review' };
    // The escalation service follows the log; until it has folded the escalation, the resolution
    // is refused (PROPOSAL_NOT_FOUND or NOT_ESCALATED), so it is retried a bounded number of times.
    let resolved;
    for (let attempt = 0; !resolved; attempt++) {
      resolved = await lead.resolve(c4.proposal_id, resolution).catch((e: unknown) => {
        if (attempt >= 40 || !(e instanceof ConclaveError) || !['PROPOSAL_NOT_FOUND', 'NOT_ESCALATED'].includes(e.code)) throw e;
        return new Promise<undefined>((r) => setTimeout(() => r(undefined), 250));
      });
    }
    expect(resolved.resolution).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' });
    expect((await decisions.waitFor(c4.proposal_id, 2))[1]).toMatchObject({ outcome: 'approved', trigger: 'manual' });

    // An unsigned command is refused: authentication is on in the stack.
    const unsigned = await ConclaveClient.connect({ nc: agentNc });
    await expect(
      unsigned.propose({ domain: 'risk.credit', author: 'agent-risk-001', payload: {}, quorum: 1, created_at: now() }),
    ).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  }, 120_000);

  it.each(['intake', 'resolver'])(
    'when the %s container is stopped and started again, then it becomes healthy and proposals are decided again',
    async (service) => {
      const before = await (
        await clientFor('agent-risk-001')
      ).propose({ domain: 'risk.credit', author: 'agent-risk-001', payload: { action: 'before_restart' }, quorum: 2, created_at: now() });
      const id = await stack.container(service);
      await stack.engineCmd('stop', id);
      expect(await stack.inspect(service, '{{.State.Running}}')).toBe('false');
      await stack.engineCmd('start', id);
      const ready = await stack.waitHealthy(service, 180_000);
      console.log(`${service} restart-to-ready (ms): ${ready - (await stack.startedAt(service))}`);

      // The proposal posted before the restart is still there, and takes its votes.
      const a = await clientFor('agent-a');
      await a.endorse(before.proposal_id, { participant_id: 'agent-a', confidence: 0.85 });
      await (await clientFor('agent-b')).endorse(before.proposal_id, { participant_id: 'agent-b', confidence: 0.7 });
      expect((await decisions.waitFor(before.proposal_id))[0]).toMatchObject({ outcome: 'approved', trigger: 'quorum' });
      expect((await a.get(before.proposal_id)).resolution).toMatchObject({ outcome: 'approved' });
    },
    300_000,
  );
});
