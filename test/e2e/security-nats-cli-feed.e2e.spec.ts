import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys, ParticipantKeyPair, provisionFeed } from '@conclave/sdk';
import { eventually } from '../support/conclave-harness';
import { ACCOUNT_PASSWORDS, AccountsDeployment, accountsWithAgents, CLIENTS_JS_API_PREFIX } from '../support/accounts-nats';
import { runConclave } from '../support/cli';

const ROOT = resolve(__dirname, '../..');
const DECISIONS = acpStreamNames().decisions;

/**
 * `conclave ... watch` as a person runs it: it streams until stopped, so this waits for its first
 * line of output (or its exit), then stops it. Its environment is `env` alone (with PATH).
 */
function watchUntilFirstLine(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', '-r', 'tsconfig-paths/register', 'apps/cli/src/main.ts', ...args], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '', TS_NODE_PROJECT: 'tsconfig.base.json', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    // A watch that neither prints nor exits within this long read nothing.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/**
 * The CLI reading a provisioned feed under the two NATS accounts (deploy/nats/nats-accounts.conf
 * on a private nats-server; intake and the resolver as the services' user; authentication
 * required). A client user's account (CLIENTS) has no JetStream: it reaches its feed only through
 * the JetStream API the services' account exports, imported under `$JS.conclave.API`. So
 * `conclave watch --bind` works for a client user given `--js-api-prefix` (or
 * NATS_JS_API_PREFIX), and with it still reaches no feed but its own.
 */
describe('security: `conclave watch --bind` as a client user under NATS accounts (--js-api-prefix)', () => {
  const deployment = new AccountsDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-cli-feed-')),
    accountsWithAgents(['alice', 'bob']),
    generateParticipantKeys(),
  );
  const keys: Record<string, ParticipantKeyPair> = { alice: generateParticipantKeys(), bob: generateParticipantKeys() };
  const clients: ConclaveClient[] = [];
  let decided = '';

  const readerLogin = () => ({
    NATS_URL: deployment.url,
    NATS_USER: 'reader',
    NATS_PASSWORD: ACCOUNT_PASSWORDS['CONCLAVE_READER_PASSWORD'],
  });
  const watchAsReader = (extra: string[]) =>
    watchUntilFirstLine(['--json', ...extra, 'watch', '--durable', 'feed-reader', '--bind'], readerLogin());

  beforeAll(async () => {
    await deployment.start();
    await deployment.startService('resolver');
    for (const [id, pair] of Object.entries(keys)) {
      await deployment.admin.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['agent'], public_key: pair.publicKey });
      await deployment.admin.call(REGISTRY_PATTERNS.grant, { participant_id: id, domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
    }
    // The operator provisions the reader's feed (every decision) and alice's (risk decisions only).
    const jsm = await deployment.admin.nc.jetstreamManager();
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-reader' });
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-alice', filter: 'acp.v1.decisions.risk' });
    // One decision on the stream: alice proposes, bob endorses, quorum 1.
    const clientAs = async (id: string) => {
      const client = await ConclaveClient.connect({
        nc: await deployment.connectAs(id),
        signer: ed25519Signer(id, keys[id].privateKeyPem),
      });
      clients.push(client);
      return client;
    };
    const p = await (await clientAs('alice')).propose({ domain: 'risk', author: 'alice', payload: { limit: 7 }, quorum: 1 });
    await (await clientAs('bob')).endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.9 });
    decided = p.proposal_id;
    await eventually(
      async () => ((await jsm.streams.info(DECISIONS)).state.messages > 0 ? true : undefined),
      20_000,
      'the decision on ACP_DECISIONS',
    );
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await deployment.stop();
  });

  it('given the reader user without the JetStream API prefix, when it runs `watch --bind` on its own feed, then its account has no JetStream to ask: the server refuses and nothing is printed', async () => {
    const run = await runConclave(['--json', 'watch', '--durable', 'feed-reader', '--bind'], readerLogin());
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/Permissions Violation for Publish to "?\$JS\.API\.CONSUMER\.INFO\.ACP_DECISIONS\.feed-reader/i);
  }, 90_000);

  it('given the reader user with --js-api-prefix $JS.conclave.API, when it runs `watch --bind` on its feed, then it prints the decision', async () => {
    const run = await watchAsReader(['--js-api-prefix', CLIENTS_JS_API_PREFIX]);
    expect(run.stderr).toBe('');
    const first = JSON.parse(run.stdout.split('\n')[0]) as DecisionEvent;
    expect(first).toMatchObject({ event_type: 'decision', proposal_id: decided, domain: 'risk', outcome: 'approved' });
  }, 90_000);

  it("given alice's login and the prefix all from the environment (NATS_USER, NATS_PASSWORD, NATS_JS_API_PREFIX), when she runs `watch risk --bind` on her feed, then she reads the decision of her feed's filter", async () => {
    const run = await watchUntilFirstLine(['--json', 'watch', 'risk', '--durable', 'feed-alice', '--bind'], {
      NATS_URL: deployment.url,
      NATS_USER: 'alice',
      NATS_PASSWORD: ACCOUNT_PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
      NATS_JS_API_PREFIX: CLIENTS_JS_API_PREFIX,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout.split('\n')[0])).toMatchObject({ event_type: 'decision', proposal_id: decided, domain: 'risk' });
  }, 90_000);

  it("given bob (an agent with the prefix, no feed of his own), when he runs `watch --bind` on alice's feed or the reader's, or on a feed of his own name that nobody provisioned, or provisions it himself, then he reads nothing and creates nothing", async () => {
    const bob = {
      NATS_URL: deployment.url,
      NATS_USER: 'bob',
      NATS_PASSWORD: ACCOUNT_PASSWORDS['CONCLAVE_BOB_PASSWORD'],
      NATS_JS_API_PREFIX: CLIENTS_JS_API_PREFIX,
    };
    // Another user's feed: its consumer info and pulls are not on bob's publish list.
    for (const feed of ['feed-alice', 'feed-reader']) {
      const run = await runConclave(['--json', 'watch', '--durable', feed, '--bind'], bob);
      expect([feed, run.code === 0, run.stdout]).toEqual([feed, false, '']);
      expect(run.stderr).toMatch(/Permissions Violation|PERMISSIONS_VIOLATION/i);
    }
    // His own name, never provisioned: the CLI says so, and creates nothing (no create is imported).
    const missing = await runConclave(['--json', 'watch', '--durable', 'feed-bob', '--bind'], bob);
    expect(missing).toMatchObject({ code: 2, stdout: '', stderr: expect.stringContaining('FEED_NOT_PROVISIONED') });
    // Nor may he provision it himself: the CLI asks through the prefix (his feed's info answers
    // "not found", so it goes on to the create), and no create is imported or on his list.
    const provision = await runConclave(['feeds', 'provision', '--stream', DECISIONS, '--durable', 'feed-bob'], bob);
    expect(provision.code).not.toBe(0);
    expect(provision.stderr).toMatch(
      /Permissions Violation for Publish to "?\$JS\.conclave\.API\.CONSUMER\.CREATE\.ACP_DECISIONS\.feed-bob/i,
    );
    const consumers: string[] = [];
    for await (const c of (await deployment.admin.nc.jetstreamManager()).consumers.list(DECISIONS)) consumers.push(c.name);
    expect(consumers.sort()).toEqual(['feed-alice', 'feed-reader']);
  }, 180_000);
});
