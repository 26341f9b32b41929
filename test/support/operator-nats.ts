import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credsAuthenticator, type ConnectionOptions } from 'nats';
import { AccountsDeployment, SERVICES_USER } from './accounts-nats';

/*
 * NATS operator mode (JWT accounts, one NKEY per user) built from deploy/nats/nats-accounts.conf
 * itself: the same accounts, exports, imports and user permissions, as the operator, account and
 * user JWTs `nsc` would issue (no nsc here: the claims are signed with the NKEYs directly), served
 * by a MEMORY resolver. A private export (`accounts: [CLIENTS]`) becomes an export that requires a
 * token, and each import carries the activation the exporting account signed for the importer.
 */

type ConfValue = string | ConfValue[] | { [key: string]: ConfValue };
type ConfMap = { [key: string]: ConfValue };

/** The subset of the NATS config syntax the accounts config uses: maps, arrays, strings, `$VARIABLES`, comments. */
export function parseNatsConf(text: string): ConfMap {
  const tokens: string[] = [];
  const quoted = new Set<number>();
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      const eol = text.indexOf('\n', i);
      i = eol < 0 ? text.length : eol;
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      quoted.add(tokens.length);
      tokens.push(text.slice(i + 1, end));
      i = end + 1;
    } else if (/[\s:=]/.test(c) && c !== '\n') {
      i++;
    } else if (/[\n,{}[\]]/.test(c)) {
      // A newline separates entries as a comma does.
      tokens.push(c === '\n' ? ',' : c);
      i++;
    } else {
      let j = i;
      while (j < text.length && !/[\s{}[\],:=#"]/.test(text[j])) j++;
      tokens.push(text.slice(i, j));
      i = j;
    }
  }
  let at = 0;
  const top: ConfMap = {};
  const value = (): ConfValue => {
    const t = tokens[at++];
    if (t === '{' && !quoted.has(at - 1)) return map('}');
    if (t === '[' && !quoted.has(at - 1)) {
      const list: ConfValue[] = [];
      for (;;) {
        while (tokens[at] === ',') at++;
        if (tokens[at] === ']') {
          at++;
          return list;
        }
        list.push(value());
      }
    }
    // A variable defined earlier in the file; anything else (an environment variable) stays as written.
    return !quoted.has(at - 1) && t.startsWith('$') && t.slice(1) in top ? top[t.slice(1)] : t;
  };
  const map = (close: string | undefined, into: ConfMap = {}): ConfMap => {
    for (;;) {
      while (tokens[at] === ',') at++;
      if (at >= tokens.length || tokens[at] === close) {
        at++;
        return into;
      }
      const key = tokens[at++];
      into[key] = value();
    }
  };
  return map(undefined, top);
}

const b64 = (x: string | Uint8Array) => Buffer.from(x).toString('base64url');

/*
 * NKEYs made and used with node's own Ed25519 (the JS implementation nats.js carries is slow
 * under Jest): the public key and the seed encoded as nkeys encodes them (a type prefix, base32,
 * a CRC-16 XMODEM checksum).
 */
const PREFIX = { operator: 14 << 3, account: 0, user: 20 << 3 } as const;
const SEED_PREFIX = 18 << 3;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) out += BASE32[(value >>> (bits -= 5)) & 31];
  }
  return bits > 0 ? out + BASE32[(value << (5 - bits)) & 31] : out;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function withChecksum(bytes: number[]): string {
  const crc = crc16(Uint8Array.from(bytes));
  return base32(Uint8Array.from([...bytes, crc & 0xff, crc >> 8]));
}

interface NKey {
  publicKey: string;
  seed: string;
  sign(data: Uint8Array): Uint8Array;
}

function createNKey(kind: keyof typeof PREFIX): NKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const raw = (x: string | undefined) => [...Buffer.from(x ?? '', 'base64url')];
  const prefix = PREFIX[kind];
  return {
    publicKey: withChecksum([prefix, ...raw(publicKey.export({ format: 'jwk' }).x)]),
    seed: withChecksum([SEED_PREFIX | (prefix >> 5), (prefix & 31) << 3, ...raw(jwk.d)]),
    sign: (data) => sign(null, data, privateKey),
  };
}

/** A JWT as nats-server reads it: ed25519-nkey, signed by the issuer's NKEY. */
function signJwt(issuer: NKey, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = b64(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const claims = {
    jti: randomBytes(16).toString('hex').toUpperCase(),
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.publicKey,
    name,
    sub: subject,
    nats: { ...nats, version: 2 },
  };
  const payload = b64(JSON.stringify(claims));
  return `${header}.${payload}.${b64(issuer.sign(new TextEncoder().encode(`${header}.${payload}`)))}`;
}

const UNLIMITED = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
const JETSTREAM = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };

const asMap = (v: ConfValue | undefined): ConfMap => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
const asList = (v: ConfValue | undefined): ConfValue[] => (Array.isArray(v) ? v : []);
const asStrings = (v: ConfValue | undefined): string[] => asList(v).filter((x): x is string => typeof x === 'string');

/** The operator mode of an accounts config: the server's config and each user's creds. */
export interface OperatorMode {
  serverConfig: string;
  creds: Map<string, string>;
  accounts: Map<string, string>;
}

export function operatorMode(accountsConf: string, storeDir: string): OperatorMode {
  const conf = parseNatsConf(accountsConf);
  const accounts = asMap(conf['accounts']);
  const operator = createNKey('operator');
  const keys = new Map(Object.keys(accounts).map((name) => [name, createNKey('account')]));
  const pub = (name: string) => {
    const kp = keys.get(name);
    if (!kp) throw new Error(`no account ${name} in the accounts config`);
    return kp.publicKey;
  };
  const system = String(conf['system_account']);
  const preload: string[] = [];
  const creds = new Map<string, string>();
  for (const [name, kp] of keys) {
    const account = asMap(accounts[name]);
    const exports = asList(account['exports']).map((e) => {
      const x = asMap(e);
      const type = 'service' in x ? 'service' : 'stream';
      const subject = String(x[type]);
      return {
        name: subject,
        subject,
        type,
        ...(x['response_type'] === 'stream' ? { response_type: 'Stream' } : {}),
        ...('accounts' in x ? { token_req: true } : {}),
      };
    });
    const imports = asList(account['imports']).map((i) => {
      const x = asMap(i);
      const type = 'service' in x ? 'service' : 'stream';
      const from = asMap(x[type]);
      const subject = String(from['subject']);
      const exporter = String(from['account']);
      const exported = asList(asMap(accounts[exporter])['exports']).map(asMap);
      const privately = exported.some((e) => 'accounts' in e && asStrings(e['accounts']).includes(name));
      const token = privately
        ? signJwt(keys.get(exporter) as NKey, kp.publicKey, subject, { type: 'activation', subject, kind: type })
        : undefined;
      return {
        name: subject,
        subject,
        account: pub(exporter),
        type,
        ...(x['to'] ? { local_subject: String(x['to']) } : {}),
        ...(token ? { token } : {}),
      };
    });
    const limits = { ...UNLIMITED, ...(account['jetstream'] === 'enabled' ? JETSTREAM : {}) };
    preload.push(`  ${kp.publicKey}: ${signJwt(operator, kp.publicKey, name, { type: 'account', limits, exports, imports })}`);
    for (const u of asList(account['users'])) {
      const user = asMap(u);
      const userName = String(user['user'] ?? user['nkey']);
      const userKp = createNKey('user');
      const permissions = asMap(user['permissions']);
      const rule = (which: string) => {
        const p = asMap(permissions[which]);
        return { ...(p['allow'] ? { allow: asStrings(p['allow']) } : {}), ...(p['deny'] ? { deny: asStrings(p['deny']) } : {}) };
      };
      const claims = {
        type: 'user',
        pub: rule('publish'),
        sub: rule('subscribe'),
        ...(permissions['allow_responses'] === 'true' ? { resp: { max: 1, ttl: 0 } } : {}),
        subs: -1,
        data: -1,
        payload: -1,
      };
      const jwt = signJwt(kp, userKp.publicKey, userName, claims);
      const seed = userKp.seed;
      creds.set(
        userName,
        `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
      );
    }
  }
  const operatorJwt = signJwt(operator, operator.publicKey, 'conclave', { type: 'operator', system_account: pub(system) });
  const serverConfig = [
    'host: 127.0.0.1',
    `jetstream { store_dir: "${storeDir}" }`,
    `operator: ${operatorJwt}`,
    `system_account: ${pub(system)}`,
    'resolver: MEMORY',
    'resolver_preload: {',
    ...preload,
    '}',
    '',
  ].join('\n');
  return { serverConfig, creds, accounts: new Map([...keys].map(([n, k]) => [n, k.publicKey])) };
}

/**
 * An AccountsDeployment whose server runs the same accounts config in operator mode: every user
 * (the services included, through NATS_CREDS) logs in with its creds file, nothing with a password.
 */
export class OperatorDeployment extends AccountsDeployment {
  private mode: OperatorMode | undefined;

  protected override writeServerConfig(): string {
    this.mode = operatorMode(this.accounts, join(this.dir, 'js'));
    for (const [user, creds] of this.mode.creds) writeFileSync(join(this.dir, `${user}.creds`), creds, { mode: 0o600 });
    writeFileSync(join(this.dir, 'operator.conf'), this.mode.serverConfig);
    return join(this.dir, 'operator.conf');
  }

  protected override login(user: string): ConnectionOptions {
    const creds = this.mode?.creds.get(user);
    if (!creds) throw new Error(`no user ${user} in the accounts config`);
    return { authenticator: credsAuthenticator(new TextEncoder().encode(creds)), inboxPrefix: `_INBOX_${user}` };
  }

  protected override serviceLoginEnv(): Record<string, string> {
    return { NATS_CREDS: join(this.dir, `${SERVICES_USER}.creds`) };
  }
}
