import { INestApplication } from '@nestjs/common';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from 'nats';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import { loadConfig } from '@conclave/service-kit';
import { IntakeConfig } from '../../apps/intake/src/app/intake.config';
import { startIntake } from '../../apps/intake/src/app/intake.app';
import { eventually } from '../support/conclave-harness';
import { freePort } from '../support/processes';

const NATS_SERVER = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';
const ROOT = join(__dirname, '../..');
const PASSWORDS: Record<string, string> = {
  CONCLAVE_SERVICES_PASSWORD: 'svcpass1',
  CONCLAVE_AGENT_PASSWORD: 'agentpass1',
  CONCLAVE_ALICE_PASSWORD: 'alicepass1',
  CONCLAVE_READER_PASSWORD: 'readerpass1',
  CONCLAVE_HUMAN_PASSWORD: 'humanpass1',
  NATS_SYS_PASSWORD: 'syspass1',
};

/**
 * deploy/nats/nats-accounts.conf with its per-agent entry copied for alice (user and password),
 * and once more for bob as an NKEY user: the identity a creds file carries.
 */
function accountsConfig(bobNkey: string): string {
  const conf = readFileSync(join(ROOT, 'deploy/nats/nats-accounts.conf'), 'utf8');
  const template = conf.split('\n').find((l) => l.trimStart().startsWith('{ user: agent,'));
  if (!template) throw new Error('no per-agent entry in nats-accounts.conf');
  const alice = template
    .replace('user: agent,', 'user: alice,')
    .replace('$CONCLAVE_AGENT_PASSWORD', '$CONCLAVE_ALICE_PASSWORD')
    .replace('"council.v1.tasks.agent"', '"council.v1.tasks.alice"')
    .replace('"_INBOX_agent.>"', '"_INBOX_alice.>"');
  const bob = template
    .replace('user: agent, password: $CONCLAVE_AGENT_PASSWORD,', `nkey: ${bobNkey},`)
    .replace('"council.v1.tasks.agent"', '"council.v1.tasks.bob"')
    .replace('"_INBOX_agent.>"', '"_INBOX_bob.>"');
  return conf.replace(template, [template, alice, bob].join('\n'));
}

/** A creds file as nsc writes it: the user JWT (here naming bob; this server checks the NKEY only) and the seed. */
function credsFile(name: string, publicKey: string, seed: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = `${part({ typ: 'JWT', alg: 'ed25519-nkey' })}.${part({ name, sub: publicKey, nats: { type: 'user', version: 2 } })}.unsigned`;
  return `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`;
}

function answers(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => (socket.destroy(), ok(true)));
    socket.on('error', () => ok(false));
  });
}

/** The CLI as a person runs it (`npm run conclave -- ...`), as a process of its own. */
function conclave(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', '-r', 'tsconfig-paths/register', 'apps/cli/src/main.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', TS_NODE_PROJECT: 'tsconfig.base.json', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => ok({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The CLI against a NATS server with accounts on (deploy/nats/nats-accounts.conf, a private
 * server of the test's own) and intake requiring authentication: it logs in as its own NATS
 * user or with a creds file, takes replies under that user's inbox prefix, and signs.
 */
describe('security: the CLI on a NATS server with accounts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-cli-accounts-'));
  let server: ChildProcess;
  let url = '';
  let intake: INestApplication;
  const admin = generateParticipantKeys();
  const aliceKeys = generateParticipantKeys();
  const bobNkey = nkeys.createUser();
  const aliceKeyFile = join(dir, 'alice.pem');
  const bobCreds = join(dir, 'bob.creds');
  let proposalId = '';

  beforeAll(async () => {
    writeFileSync(join(dir, 'accounts.conf'), accountsConfig(bobNkey.getPublicKey()));
    writeFileSync(join(dir, 'nats.conf'), `host: 127.0.0.1\njetstream { store_dir: "${join(dir, 'js')}" }\ninclude ./accounts.conf\n`);
    writeFileSync(aliceKeyFile, aliceKeys.privateKeyPem, { mode: 0o600 });
    writeFileSync(bobCreds, credsFile('bob', bobNkey.getPublicKey(), new TextDecoder().decode(bobNkey.getSeed())), { mode: 0o600 });
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    server = spawn(NATS_SERVER, ['-c', join(dir, 'nats.conf'), '-p', String(port)], {
      env: { ...process.env, ...PASSWORDS },
      stdio: 'ignore',
    });
    await eventually(async () => (await answers(port)) || undefined, 10_000, 'the private nats-server');

    intake = await startIntake(
      loadConfig(IntakeConfig, {
        NATS_URL: url,
        NATS_USER: 'conclave-services',
        NATS_PASSWORD: PASSWORDS['CONCLAVE_SERVICES_PASSWORD'],
        NATS_INBOX_PREFIX: '_INBOX_conclave-services',
        CONCLAVE_AUTH_MODE: 'required',
        CONCLAVE_INSECURE_OPEN_NATS: 'false',
        CONCLAVE_BOOTSTRAP_ADMIN: `admin=${admin.publicKey}`,
        CONCLAVE_EXIT_ON_FATAL: 'false',
        HTTP_PORT: '0',
        LOG_LEVEL: 'warn',
      }),
    );
    // Registry administration is not on the agents' allow lists: the test administers as the services' user.
    const adminClient = await ConclaveClient.connect({
      servers: url,
      user: 'conclave-services',
      pass: PASSWORDS['CONCLAVE_SERVICES_PASSWORD'],
      inboxPrefix: '_INBOX_conclave-services',
      signer: ed25519Signer('admin', admin.privateKeyPem),
    });
    await adminClient.call(REGISTRY_PATTERNS.register, { participant_id: 'alice', roles: ['agent'], public_key: aliceKeys.publicKey });
    await adminClient.call(REGISTRY_PATTERNS.grant, { participant_id: 'alice', domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
    await adminClient.close();
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
    await intake?.close().catch(() => undefined);
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
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
