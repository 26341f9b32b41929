import { INestApplication } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import type { ParticipantKeyPair } from '@conclave/sdk';
import { ConclaveClient, ed25519Signer } from '@conclave/sdk';
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';
import { loadConfig } from '@conclave/service-kit';
import { IntakeConfig } from '../../apps/intake/src/app/intake.config';
import { startIntake } from '../../apps/intake/src/app/intake.app';
import { CouncilConfig } from '../../apps/council/src/app/council.config';
import { startCouncil } from '../../apps/council/src/app/council.app';
import { AuditConfig } from '../../apps/audit/src/app/audit.config';
import { startAudit } from '../../apps/audit/src/app/audit.app';
import { ResolverConfig } from '../../apps/resolver/src/app/resolver.config';
import { EscalationConfig } from '../../apps/escalation/src/app/escalation.config';
import { startEscalation } from '../../apps/escalation/src/app/escalation.app';
import { startResolver } from '../../apps/resolver/src/app/resolver.app';
import { eventually } from './conclave-harness';
import { freePort } from './processes';

const NATS_SERVER = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';
const ROOT = join(__dirname, '../..');

/** The JetStream API prefix under which the clients' account (CLIENTS) imports the services' feed API. */
export const CLIENTS_JS_API_PREFIX = '$JS.conclave.API';

/** The services' user, in the services' account (CONCLAVE); every other user is in CLIENTS. */
export const SERVICES_USER = 'conclave-services';

/** The passwords deploy/nats/nats-accounts.conf reads from the environment, for a test server. */
export const ACCOUNT_PASSWORDS: Record<string, string> = {
  CONCLAVE_SERVICES_PASSWORD: 'svcpass1',
  CONCLAVE_AGENT_PASSWORD: 'agentpass1',
  CONCLAVE_ALICE_PASSWORD: 'alicepass1',
  CONCLAVE_BOB_PASSWORD: 'bobpass1',
  CONCLAVE_MALLORY_PASSWORD: 'mallorypass1',
  CONCLAVE_READER_PASSWORD: 'readerpass1',
  CONCLAVE_HUMAN_PASSWORD: 'humanpass1',
  CONCLAVE_LISTENER_PASSWORD: 'listenerpass1',
  NATS_SYS_PASSWORD: 'syspass1',
};

/**
 * deploy/nats/nats-accounts.conf and its per-agent entry (what a deployment copies per agent):
 * from the line that opens `{ user: agent,` to the brace that closes it.
 */
export function accountsTemplate(): { conf: string; agentEntry: string } {
  const conf = readFileSync(join(ROOT, 'deploy/nats/nats-accounts.conf'), 'utf8');
  const start = conf.search(/^[ \t]*\{ user: agent,/m);
  if (start < 0) throw new Error('no per-agent entry in nats-accounts.conf');
  const open = conf.indexOf('{', start);
  let depth = 0;
  for (let i = open; i < conf.length; i++) {
    const c = conf[i];
    if (c === '#') i = conf.indexOf('\n', i);
    else if (c === '"') i = conf.indexOf('"', i + 1);
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return { conf, agentEntry: conf.slice(open, i + 1) };
    if (i < 0) break;
  }
  throw new Error('the per-agent entry of nats-accounts.conf does not close');
}

/** The per-agent entry copied for `name`, replacing `agent` in its thirteen places, as its comment says. */
export function agentEntryFor(entry: string, name: string): string {
  return entry
    .replace('user: agent,', `user: ${name},`)
    .replace('$CONCLAVE_AGENT_PASSWORD', `$CONCLAVE_${name.toUpperCase()}_PASSWORD`)
    .replaceAll('feed-agent', `feed-${name}`)
    .replaceAll('member-agent', `member-${name}`)
    .replace('"council.v1.answers.agent"', `"council.v1.answers.${name}"`)
    .replace('"_INBOX_agent.>"', `"_INBOX_${name}.>"`);
}

/**
 * A user in the clients' account that may subscribe to anything and publish nothing: with no
 * interest on a reply subject the server serves no pull, so a listener makes a reply-subject
 * attack its strongest (the answers are sent) and shows where they went.
 */
export const LISTENER_ENTRY =
  '{ user: listener, password: $CONCLAVE_LISTENER_PASSWORD, permissions: { publish: { deny: [">"] }, subscribe: { allow: [">"] } } }';

/** deploy/nats/nats-accounts.conf with its per-agent entry copied for each name (as its comment says), and any other user entries beside them. */
export function accountsWithAgents(names: string[], others: string[] = []): string {
  const { conf, agentEntry } = accountsTemplate();
  return conf.replace(agentEntry, [agentEntry, ...names.map((n) => agentEntryFor(agentEntry, n)), ...others].join('\n'));
}

function answers(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => (socket.destroy(), ok(true)));
    socket.on('error', () => ok(false));
  });
}

/**
 * A private nats-server running an accounts config (never the shared server), with intake
 * connected as the services' user under its own inbox prefix, authentication required, and an
 * administrator client (registry administration is not on the agents' allow lists, so the test
 * administers as the services' user).
 */
export class AccountsDeployment {
  url = '';
  intake!: INestApplication;
  admin!: ConclaveClient;
  private server: ChildProcess | undefined;
  private readonly services: INestApplication[] = [];
  private readonly connections: NatsConnection[] = [];

  constructor(
    protected readonly dir: string,
    protected readonly accounts: string,
    private readonly adminKeys: ParticipantKeyPair,
  ) {}

  async start(): Promise<this> {
    const port = await freePort();
    this.url = `nats://127.0.0.1:${port}`;
    this.server = spawn(NATS_SERVER, ['-c', this.writeServerConfig(), '-p', String(port)], {
      env: { ...process.env, ...ACCOUNT_PASSWORDS },
      stdio: 'ignore',
    });
    await eventually(async () => (await answers(port)) || undefined, 10_000, 'the private nats-server');
    this.intake = await startIntake(loadConfig(IntakeConfig, this.serviceEnv()));
    const adminNc = await connect({ servers: this.url, ...this.login(SERVICES_USER) });
    this.connections.push(adminNc);
    this.admin = await ConclaveClient.connect({ nc: adminNc, signer: ed25519Signer('admin', this.adminKeys.privateKeyPem) });
    return this;
  }

  /** The server's config file (the accounts config included), written into the deployment's directory. */
  protected writeServerConfig(): string {
    writeFileSync(join(this.dir, 'accounts.conf'), this.accounts);
    writeFileSync(
      join(this.dir, 'nats.conf'),
      `host: 127.0.0.1\njetstream { store_dir: "${join(this.dir, 'js')}" }\ninclude ./accounts.conf\n`,
    );
    return join(this.dir, 'nats.conf');
  }

  /** How `user` logs in (user and password of the accounts config), under its own inbox prefix. */
  protected login(user: string): ConnectionOptions {
    const variable = user === SERVICES_USER ? 'CONCLAVE_SERVICES_PASSWORD' : `CONCLAVE_${user.toUpperCase()}_PASSWORD`;
    return { user, pass: ACCOUNT_PASSWORDS[variable], inboxPrefix: `_INBOX_${user}` };
  }

  /** The same login as the services' environment. */
  protected serviceLoginEnv(): Record<string, string> {
    return { NATS_USER: SERVICES_USER, NATS_PASSWORD: ACCOUNT_PASSWORDS['CONCLAVE_SERVICES_PASSWORD'] };
  }

  /**
   * Starts another service in this process, as deployed: the services' user, default subjects
   * and stream names (those nats-accounts.conf assumes), authentication required.
   */
  async startService(name: 'council' | 'audit' | 'resolver' | 'escalation', env: Record<string, string> = {}): Promise<INestApplication> {
    const app =
      name === 'council'
        ? await startCouncil(loadConfig(CouncilConfig, this.serviceEnv(env)))
        : name === 'resolver'
          ? await startResolver(loadConfig(ResolverConfig, this.serviceEnv(env)))
          : name === 'escalation'
            ? await startEscalation(loadConfig(EscalationConfig, this.serviceEnv(env)))
            : await startAudit(loadConfig(AuditConfig, this.serviceEnv(env)));
    this.services.push(app);
    return app;
  }

  /**
   * A NATS connection as `user` of the accounts config, under its own inbox prefix; closed by
   * stop(). A client user's connection uses the JetStream API as its account imports it
   * (CLIENTS_JS_API_PREFIX), as a deployed client does.
   */
  async connectAs(user: string): Promise<NatsConnection> {
    const nc = await connect({ servers: this.url, ...this.login(user) });
    this.connections.push(nc);
    return user === SERVICES_USER ? nc : ConclaveClient.withJetStreamApiPrefix(nc, CLIENTS_JS_API_PREFIX);
  }

  /** Stops a service started by startService (the SIGTERM path). */
  async stopService(app: INestApplication): Promise<void> {
    this.services.splice(this.services.indexOf(app), 1);
    await app.close();
  }

  private serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      NATS_URL: this.url,
      ...this.serviceLoginEnv(),
      NATS_INBOX_PREFIX: '_INBOX_conclave-services',
      CONCLAVE_AUTH_MODE: 'required',
      CONCLAVE_INSECURE_OPEN_NATS: 'false',
      CONCLAVE_BOOTSTRAP_ADMIN: `admin=${this.adminKeys.publicKey}`,
      CONCLAVE_EXIT_ON_FATAL: 'false',
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...extra,
    };
  }

  async stop(): Promise<void> {
    for (const nc of this.connections.splice(0)) await nc.close().catch(() => undefined);
    await this.admin?.close().catch(() => undefined);
    for (const app of this.services.splice(0).reverse()) await app.close().catch(() => undefined);
    await this.intake?.close().catch(() => undefined);
    this.server?.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
