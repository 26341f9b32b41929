import { INestApplication } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, NatsConnection } from 'nats';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import { eventually } from '../support/conclave-harness';
import { freePort, PrivateNatsServer } from '../support/processes';
import { ACCOUNT_PASSWORDS, AccountsDeployment, accountsWithAgents } from '../support/accounts-nats';

const PASSWORDS = ACCOUNT_PASSWORDS;

/** The subjects the server refused this connection a subscription to. */
function refusedSubscriptions(nc: NatsConnection): string[] {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) {
      const ctx = (s as { permissionContext?: { operation: string; subject: string } }).permissionContext;
      if (s.type === 'error' && ctx?.operation === 'subscription') seen.push(ctx.subject);
    }
  })();
  return seen;
}

/**
 * Who can read whose replies on a NATS server running deploy/nats/nats-accounts.conf (a private
 * server of the test's own, never the shared one), with intake connected as the services' user
 * under its own inbox prefix and authentication required.
 */
describe('security: NATS accounts, per-user inbox prefixes', () => {
  const deployment = new AccountsDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-')),
    accountsWithAgents(['alice', 'mallory']),
    generateParticipantKeys(),
  );
  let url = '';
  let intake: INestApplication;
  const open: NatsConnection[] = [];
  const aliceKeys = generateParticipantKeys();

  const user = async (name: string, inboxPrefix = `_INBOX_${name}`) => {
    const nc = await connect({
      servers: url,
      user: name,
      pass: PASSWORDS[`CONCLAVE_${name.toUpperCase().replace('CONCLAVE-', '')}_PASSWORD`],
      inboxPrefix,
    });
    open.push(nc);
    return nc;
  };

  beforeAll(async () => {
    await deployment.start();
    ({ url, intake } = deployment);
    const adminClient = deployment.admin;
    await adminClient.call(REGISTRY_PATTERNS.register, {
      participant_id: 'alice',
      roles: ['agent'],
      public_key: aliceKeys.publicKey,
      clearance: 'restricted',
    });
    await adminClient.call(REGISTRY_PATTERNS.grant, { participant_id: 'alice', domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
  }, 30_000);

  afterAll(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await deployment.stop();
  });

  it("given alice and mallory with users of their own, when mallory subscribes to alice's inbox prefix, to _INBOX.> or to the services' inbox, then the server refuses and alice's reply reaches alice only", async () => {
    const alice = await ConclaveClient.connect({
      servers: url,
      user: 'alice',
      pass: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
      inboxPrefix: '_INBOX_alice',
      signer: ed25519Signer('alice', aliceKeys.privateKeyPem),
    });
    const mallory = await user('mallory');
    const refused = refusedSubscriptions(mallory);
    const overheard: string[] = [];
    for (const subject of ['_INBOX_alice.>', '_INBOX.>', '_INBOX_conclave-services.>', '>']) {
      mallory.subscribe(subject, { callback: (_err, m) => m && overheard.push(m.subject) });
    }
    await mallory.flush();

    const proposal = await alice.propose({
      domain: 'risk',
      author: 'alice',
      payload: { merger: 'acme' },
      quorum: 5,
      created_at: new Date().toISOString(),
      classification: 'restricted',
    });
    expect((await alice.get(proposal.proposal_id)).payload).toEqual({ merger: 'acme' });

    await eventually(async () => (refused.length >= 4 ? true : undefined), 5_000, 'four refused subscriptions');
    expect(refused.sort()).toEqual(['>', '_INBOX.>', '_INBOX_alice.>', '_INBOX_conclave-services.>']);
    expect(overheard).toEqual([]);
    await alice.close();
  });

  it("given mallory's password, when she connects with alice's inbox prefix to receive there, then her requests get no reply", async () => {
    const posing = await user('mallory', '_INBOX_alice');
    const refused = refusedSubscriptions(posing);
    await expect(posing.request('acp.v1.list', new TextEncoder().encode('{}'), { timeout: 1_000 })).rejects.toMatchObject({
      code: 'PERMISSIONS_VIOLATION',
    });
    await eventually(
      async () => (refused.some((subject) => subject.startsWith('_INBOX_alice.')) ? true : undefined),
      5_000,
      'the inbox subscription refused',
    );
  });

  it('given her own inbox prefix, mallory gets replies (the prefix restricts, it does not lock agents out)', async () => {
    const mallory = await user('mallory');
    const reply = JSON.parse(
      new TextDecoder().decode((await mallory.request('acp.v1.list', new TextEncoder().encode('{}'), { timeout: 5_000 })).data),
    );
    expect(reply).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
  });

  it('given CONCLAVE_AUTH_MODE=required, when a service connects to a NATS server that does not authenticate clients, then the process refuses to start; on the accounts server it started without the override', async () => {
    expect(await (await fetch(`${(await intake.getUrl()).replace('[::1]', '127.0.0.1')}/readyz`)).status).toBe(200);
    const openServer = new PrivateNatsServer();
    try {
      await openServer.start();
      // A process of its own, as deployed: refusing to start means exiting.
      const child = spawn(process.execPath, ['-r', '@swc-node/register', '-r', 'tsconfig-paths/register', 'apps/intake/src/main.ts'], {
        cwd: join(__dirname, '../..'),
        env: {
          PATH: process.env['PATH'] ?? '',
          TS_NODE_PROJECT: 'tsconfig.base.json',
          NATS_URL: openServer.url,
          CONCLAVE_AUTH_MODE: 'required',
          HTTP_PORT: String(await freePort()),
          LOG_LEVEL: 'error',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (d) => (output += d));
      child.stderr?.on('data', (d) => (output += d));
      const code = await new Promise<number | null>((ok) => child.once('exit', (c) => ok(c)));
      expect(code).not.toBe(0);
      expect(output).toMatch(/did not authenticate this connection/);
    } finally {
      await openServer.dispose();
    }
  }, 90_000);
});
