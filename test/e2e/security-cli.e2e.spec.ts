import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from 'nats';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import { ACCOUNT_PASSWORDS, AccountsDeployment, accountsTemplate, agentEntryFor } from '../support/accounts-nats';
import { runConclave } from '../support/cli';

const PASSWORDS = ACCOUNT_PASSWORDS;

/**
 * deploy/nats/nats-accounts.conf with its per-agent entry copied for alice (user and password),
 * and once more for bob as an NKEY user: the identity a creds file carries.
 */
function accountsConfig(bobNkey: string): string {
  const { conf, agentEntry } = accountsTemplate();
  const bob = agentEntry
    .replace('user: agent, password: $CONCLAVE_AGENT_PASSWORD,', `nkey: ${bobNkey},`)
    .replace('"council.v1.tasks.agent"', '"council.v1.tasks.bob"')
    .replace('"_INBOX_agent.>"', '"_INBOX_bob.>"');
  return conf.replace(agentEntry, [agentEntry, agentEntryFor(agentEntry, 'alice'), bob].join('\n'));
}

function credsFile(name: string, publicKey: string, seed: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = `${part({ typ: 'JWT', alg: 'ed25519-nkey' })}.${part({ name, sub: publicKey, nats: { type: 'user', version: 2 } })}.unsigned`;
  return `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`;
}

const conclave = runConclave;

/**
 * The CLI against a NATS server with accounts on (deploy/nats/nats-accounts.conf, a private
 * server of the test's own) and intake requiring authentication: it logs in as its own NATS
 * user or with a creds file, takes replies under that user's inbox prefix, and signs.
 */
describe('security: the CLI on a NATS server with accounts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-cli-accounts-'));
  let url = '';
  let deployment: AccountsDeployment;
  const aliceKeys = generateParticipantKeys();
  const bobNkey = nkeys.createUser();
  const aliceKeyFile = join(dir, 'alice.pem');
  const bobCreds = join(dir, 'bob.creds');
  let proposalId = '';

  beforeAll(async () => {
    writeFileSync(aliceKeyFile, aliceKeys.privateKeyPem, { mode: 0o600 });
    writeFileSync(bobCreds, credsFile('bob', bobNkey.getPublicKey(), new TextDecoder().decode(bobNkey.getSeed())), { mode: 0o600 });
    deployment = await new AccountsDeployment(dir, accountsConfig(bobNkey.getPublicKey()), generateParticipantKeys()).start();
    url = deployment.url;
    const adminClient = deployment.admin;
    await adminClient.call(REGISTRY_PATTERNS.register, { participant_id: 'alice', roles: ['agent'], public_key: aliceKeys.publicKey });
    await adminClient.call(REGISTRY_PATTERNS.grant, { participant_id: 'alice', domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
    const alice = await ConclaveClient.connect({
      servers: url,
      user: 'alice',
      pass: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
      inboxPrefix: '_INBOX_alice',
      signer: ed25519Signer('alice', aliceKeys.privateKeyPem),
    });
    proposalId = (await alice.propose({ domain: 'risk', author: 'alice', payload: { merger: 'acme' }, quorum: 5 })).proposal_id;
    await alice.close();
  }, 30_000);

  afterAll(async () => {
    await deployment?.stop();
  });

  const signedAsAlice = ['--participant', 'alice', '--key-file', aliceKeyFile];

  it('given --nats-user alice and her password in NATS_PASSWORD, when she runs `get`, then the CLI logs in, takes the reply under _INBOX_alice and prints the proposal', async () => {
    const run = await conclave(['--nats', url, '--nats-user', 'alice', ...signedAsAlice, '--json', 'get', proposalId], {
      NATS_PASSWORD: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
    });
    expect(run.stderr).toBe('');
    // Exit 13: the proposal is pending (the get command's exit code tells the outcome).
    expect(run.code).toBe(13);
    expect(JSON.parse(run.stdout)).toMatchObject({ proposal_id: proposalId, payload: { merger: 'acme' } });
  }, 90_000);

  it('given the same login from the environment (NATS_USER, NATS_PASSWORD, NATS_INBOX_PREFIX), then `list` works without flags', async () => {
    const run = await conclave(['--json', 'list'], {
      NATS_URL: url,
      NATS_USER: 'alice',
      NATS_PASSWORD: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
      NATS_INBOX_PREFIX: '_INBOX_alice',
      CONCLAVE_PARTICIPANT: 'alice',
      CONCLAVE_KEY_FILE: aliceKeyFile,
    });
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { proposals: Array<{ proposal_id: string }> }).proposals.map((p) => p.proposal_id)).toContain(
      proposalId,
    );
  }, 90_000);

  it("given --nats-creds with bob's creds file (his NKEY), then the CLI logs in as bob and takes replies under _INBOX_bob, the name in the file", async () => {
    // Bob is a NATS identity but not a registered participant: intake answers him, and refuses him.
    const run = await conclave(['--nats', url, '--nats-creds', bobCreds, 'list']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error UNAUTHENTICATED/);
  }, 90_000);

  it("given alice's user with bob's inbox prefix (--inbox-prefix _INBOX_bob), then the server refuses the subscription and the CLI gets no reply", async () => {
    const run = await conclave(
      ['--nats', url, '--nats-user', 'alice', '--inbox-prefix', '_INBOX_bob', ...signedAsAlice, 'get', proposalId],
      {
        NATS_PASSWORD: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
      },
    );
    expect(run.code).not.toBe(0);
    expect(run.stdout).not.toContain('acme');
    expect(run.stderr).toMatch(/Permissions Violation|PERMISSIONS_VIOLATION|TIMEOUT|timeout/i);
  }, 90_000);

  it('given no NATS login, or a user without NATS_PASSWORD, then the CLI cannot use the server: authorization refused, or a usage error (exit 64) before connecting', async () => {
    const anonymous = await conclave(['--nats', url, ...signedAsAlice, 'list']);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/Authorization Violation|AUTHORIZATION_VIOLATION/i);

    const noPassword = await conclave(['--nats', url, '--nats-user', 'alice', 'list']);
    expect(noPassword.code).toBe(64);
    expect(noPassword.stderr).toMatch(/NATS_PASSWORD/);

    const both = await conclave(['--nats', url, '--nats-user', 'alice', '--nats-creds', bobCreds, 'list'], {
      NATS_PASSWORD: PASSWORDS['CONCLAVE_ALICE_PASSWORD'],
    });
    expect(both.code).toBe(64);
  }, 90_000);
});
