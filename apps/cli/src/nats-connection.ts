import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { credsAuthenticator } from 'nats';
import type { Authenticator } from 'nats';

/** The global options that say how the CLI logs in to NATS (the same variables the services read). */
export interface NatsLoginOptions {
  nats: string;
  natsUser?: string;
  natsCreds?: string;
  inboxPrefix?: string;
  jsApiPrefix?: string;
}

/** What `connect` (nats) and `ConclaveClient.connect` take from those options. */
export interface NatsLogin {
  servers: string;
  user?: string;
  pass?: string;
  authenticator?: Authenticator;
  inboxPrefix?: string;
}

/** A usage mistake in the login options: the CLI prints it and exits 64, before connecting. */
export class NatsLoginError extends Error {
  readonly exitCode = 64;
}

const INBOX_PREFIX = /^_INBOX[A-Za-z0-9_-]*$/;
/** A subject of literal tokens: no wildcard, no empty token, no whitespace. */
const JS_API_PREFIX = /^[^.*>\s]+(\.[^.*>\s]+)*$/;

/**
 * Adds `--nats-user`, `--nats-creds`, `--inbox-prefix` and `--js-api-prefix` (flags win over
 * NATS_USER, NATS_CREDS, NATS_INBOX_PREFIX, NATS_JS_API_PREFIX).
 */
export function addNatsLoginOptions(program: Command, env: NodeJS.ProcessEnv): Command {
  return program
    .option('--nats-user <user>', 'NATS user (its password from NATS_PASSWORD, never a flag)', env['NATS_USER'])
    .option('--nats-creds <file>', "NATS credentials file (operator mode: the user's JWT and NKEY seed)", env['NATS_CREDS'])
    .option(
      '--inbox-prefix <prefix>',
      'where replies arrive, starting with _INBOX (the services answer only into an inbox); default _INBOX_<user> when a user or creds file is given (deploy/nats: each user may subscribe only below its own prefix)',
      env['NATS_INBOX_PREFIX'],
    )
    .option(
      '--js-api-prefix <prefix>',
      "the JetStream API prefix under which the user's NATS account imports the feeds: $JS.conclave.API for a client user of deploy/nats/nats-accounts.conf (agents, readers, humans); none for the services' user or a single account",
      env['NATS_JS_API_PREFIX'],
    );
}

/**
 * The JetStream API prefix to use (`ConclaveClient.connect({jsApiPrefix})`), or undefined for the
 * server's own `$JS.API`. A client user of the accounts config has no JetStream in its account:
 * it reaches the feeds only through the imported API, so `watch --bind` needs the prefix there.
 */
export function natsJsApiPrefix(o: Pick<NatsLoginOptions, 'jsApiPrefix'>): string | undefined {
  const prefix = o.jsApiPrefix;
  if (prefix === undefined || prefix === '') return undefined;
  if (!JS_API_PREFIX.test(prefix)) {
    throw new NatsLoginError(`--js-api-prefix must be a subject without wildcards (e.g. $JS.conclave.API), got ${prefix}`);
  }
  return prefix;
}

/**
 * How to log in: a creds file, or a user with the password from NATS_PASSWORD (a password on the
 * command line would show in the process list and the shell history). With accounts on, a
 * client must take replies under its own prefix (`_INBOX_<user>`, the accounts config), so that
 * prefix is the default whenever the user is known; on an open server nothing changes.
 */
export function natsLogin(o: NatsLoginOptions, env: NodeJS.ProcessEnv): NatsLogin {
  if (o.natsUser && o.natsCreds) throw new NatsLoginError('give either --nats-user or --nats-creds, not both');
  const login: NatsLogin = { servers: o.nats };
  let user: string | undefined;
  if (o.natsCreds) {
    const creds = readCredsFile(o.natsCreds);
    login.authenticator = credsAuthenticator(creds);
    user = credsUserName(new TextDecoder().decode(creds));
  } else if (o.natsUser) {
    const pass = env['NATS_PASSWORD'];
    if (!pass) throw new NatsLoginError(`--nats-user ${o.natsUser} needs its password in NATS_PASSWORD`);
    login.user = o.natsUser;
    login.pass = pass;
    user = o.natsUser;
  }
  const prefix = o.inboxPrefix ?? (user ? `_INBOX_${user}` : undefined);
  if (prefix !== undefined) {
    if (!INBOX_PREFIX.test(prefix)) throw new NatsLoginError(`--inbox-prefix must match ${INBOX_PREFIX.source}, got ${prefix}`);
    login.inboxPrefix = prefix;
  }
  return login;
}

function readCredsFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new NatsLoginError(`--nats-creds: cannot read ${path}: ${(err as Error).message}`);
  }
}

/**
 * The user name inside a creds file (the `name` claim of its user JWT), which operator-mode
 * deployments use for the inbox prefix (`_INBOX_{{name()}}`). Undefined when absent or unreadable:
 * then the caller gives --inbox-prefix.
 */
export function credsUserName(creds: string): string | undefined {
  const jwt = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.=-]+)\s*------END NATS USER JWT------/.exec(creds)?.[1];
  const payload = jwt?.split('.')[1];
  if (!payload) return undefined;
  try {
    const name = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { name?: unknown }).name;
    return typeof name === 'string' && /^[A-Za-z0-9_-]+$/.test(name) ? name : undefined;
  } catch {
    return undefined;
  }
}
