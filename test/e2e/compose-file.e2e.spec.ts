import Ajv, { ErrorObject } from 'ajv';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import YAML from 'yaml';
import { loadConfig } from '@conclave/service-kit';
import { CouncilConfig } from '../../apps/council/src/app/council.config';

/**
 * docker-compose.yml as Docker Compose v2 reads it, without docker: YAML with merge keys, then
 * variable interpolation, then the Compose Specification JSON schema, then the cross-references
 * Compose v2 checks when it loads a project and podman-compose 1.0.3 ignores (depends_on
 * conditions, profiles, named volumes, durations). The schema is the one the npm package
 * `docker-compose` ships (`schema/compose-spec.json`, copied there from the Compose Specification
 * project, Apache-2.0; see its NOTICE): a devDependency, so nothing is fetched at test time.
 */
const ROOT = resolve(__dirname, '../..');
const COMPOSE_FILE = resolve(ROOT, 'docker-compose.yml');
const SCHEMA_FILE = require.resolve('docker-compose/schema/compose-spec.json');

/**
 * The variables compose refuses to start without (docs/operations.md, "Images and the compose
 * stack"): the five NATS passwords and the council service's key file.
 */
const REQUIRED_VARIABLES = [
  'CONCLAVE_SERVICES_PASSWORD',
  'CONCLAVE_AGENT_PASSWORD',
  'CONCLAVE_READER_PASSWORD',
  'CONCLAVE_HUMAN_PASSWORD',
  'NATS_SYS_PASSWORD',
  'CONCLAVE_COUNCIL_KEY',
];
const COUNCIL_KEY = '/srv/conclave/council-service.pem';
const PASSWORDS: Record<string, string> = {
  ...Object.fromEntries(REQUIRED_VARIABLES.map((v) => [v, 'placeholder1'])),
  CONCLAVE_COUNCIL_KEY: COUNCIL_KEY,
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface Service {
  profiles?: string[];
  depends_on?: string[] | Record<string, { condition: string; required?: boolean }>;
  environment?: Record<string, string | null>;
  secrets?: Array<string | { source: string; target?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean; interval?: string; timeout?: string; start_period?: string };
  volumes?: Array<string | { type?: string; source?: string }>;
  ports?: Array<string | { published?: string | number; host_ip?: string }>;
  stop_grace_period?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  secrets?: Record<string, { file?: string; environment?: string; external?: boolean }>;
}

class InterpolationError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The Compose Specification's interpolation ("Interpolation"): `$$` is a literal `$`;
 * `${VAR}` / `$VAR`; `${VAR:-default}` (unset or empty) and `${VAR-default}` (unset);
 * `${VAR:?error}` / `${VAR?error}` stop with the error; `${VAR:+alt}` / `${VAR+alt}`.
 */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, name, op, arg, bare) => {
      if (whole === '$$') return '$';
      if (bare) return env[bare] ?? '';
      const v = env[name];
      const unset = v === undefined;
      const empty = unset || v === '';
      switch (op) {
        case undefined:
          return v ?? '';
        case ':-':
          return empty ? arg : v;
        case '-':
          return unset ? arg : v;
        case ':?':
          if (empty) throw new InterpolationError(name, `required variable ${name} is missing a value: ${arg}`);
          return v;
        case '?':
          if (unset) throw new InterpolationError(name, `required variable ${name} is missing a value: ${arg}`);
          return v;
        case ':+':
          return empty ? '' : arg;
        default:
          return unset ? '' : arg;
      }
    },
  );
}

function interpolateAll(node: Json, env: Record<string, string | undefined>): Json {
  if (typeof node === 'string') return interpolate(node, env);
  if (Array.isArray(node)) return node.map((n) => interpolateAll(n, env));
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateAll(v, env)]));
  return node;
}

/** The file as YAML with `<<` merge keys resolved, as Compose's loader reads it. */
function parseCompose(text: string): Json {
  const doc = YAML.parseDocument(text, { merge: true });
  if (doc.errors.length) throw new Error(doc.errors.map(String).join('; '));
  return doc.toJSON() as Json;
}

function load(text: string, env: Record<string, string | undefined>): ComposeFile {
  return interpolateAll(parseCompose(text), env) as unknown as ComposeFile;
}

function schemaValidator() {
  const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
  // Its `$schema` is draft-07 under an https URL ajv does not know, and it uses draft 2019's
  // `deprecated` annotation: validate against it as the draft-07 schema it is.
  delete schema['$schema'];
  const ajv = new Ajv({ allErrors: true, strict: false });
  return ajv.compile(schema);
}
const validateSchema = schemaValidator();

function schemaErrors(file: unknown): string[] {
  return validateSchema(file) ? [] : (validateSchema.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message}`);
}

/** Go's time.ParseDuration syntax, which Compose v2 applies to healthcheck times and stop_grace_period. */
const GO_DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;

function dependsOn(s: Service): Array<{ on: string; condition: string; required: boolean }> {
  if (!s.depends_on) return [];
  if (Array.isArray(s.depends_on)) return s.depends_on.map((on) => ({ on, condition: 'service_started', required: true }));
  return Object.entries(s.depends_on).map(([on, d]) => ({ on, condition: d.condition, required: d.required ?? true }));
}

/**
 * What Compose v2 refuses when it loads or starts the project and podman-compose 1.0.3 lets
 * through: a dependency on an undefined service, `service_healthy` on a service without a
 * healthcheck, a service of the default `up` depending on one behind a profile, an undeclared
 * named volume, a duration Go cannot parse, the same host port published twice.
 */
function composeV2Problems(file: ComposeFile): string[] {
  const problems: string[] = [];
  const services = file.services;
  for (const [name, s] of Object.entries(services)) {
    for (const d of dependsOn(s)) {
      const target = services[d.on];
      if (!target) {
        problems.push(`${name}: depends_on ${d.on}, which is not a service`);
        continue;
      }
      if (d.condition === 'service_healthy' && (!target.healthcheck?.test || target.healthcheck.disable))
        problems.push(`${name}: depends_on ${d.on} with service_healthy, but ${d.on} has no healthcheck`);
      if (d.required && !s.profiles?.length && target.profiles?.length)
        problems.push(`${name} (no profile) depends_on ${d.on}, which runs only with profile ${target.profiles.join('/')}`);
    }
    for (const v of s.volumes ?? []) {
      const source = typeof v === 'string' ? v.split(':')[0] : v.type === 'volume' ? v.source : undefined;
      const named = source && !source.startsWith('.') && !source.startsWith('/') && !source.startsWith('~') && v !== source;
      if (named && !(file.volumes && source in file.volumes)) problems.push(`${name}: volume ${source} is not declared under volumes`);
    }
    for (const secret of s.secrets ?? []) {
      const source = typeof secret === 'string' ? secret : secret.source;
      if (!(file.secrets && source in file.secrets)) problems.push(`${name}: secret ${source} is not declared under secrets`);
    }
    const durations = { ...s.healthcheck, stop_grace_period: s.stop_grace_period };
    for (const key of ['interval', 'timeout', 'start_period', 'stop_grace_period'] as const) {
      const d = durations[key];
      if (d !== undefined && !GO_DURATION.test(d)) problems.push(`${name}: ${key} "${d}" is not a duration Compose can parse`);
    }
  }
  const published = new Map<string, string>();
  for (const [name, s] of Object.entries(services)) {
    for (const p of s.ports ?? []) {
      const key =
        typeof p === 'string' ? hostPortOf(p) : p.published !== undefined ? `${p.host_ip ?? '0.0.0.0'}:${p.published}` : undefined;
      if (!key) continue;
      const other = published.get(key);
      if (other) problems.push(`${name}: host port ${key} is published by ${other} too`);
      published.set(key, name);
    }
  }
  return problems;
}

/** `[ip:]host:container[/proto]` → `ip:host`, or undefined when no host port is given. */
function hostPortOf(spec: string): string | undefined {
  const parts = spec.replace(/\/(tcp|udp)$/, '').split(':');
  if (parts.length < 2) return undefined;
  const host = parts[parts.length - 2];
  const ip = parts.length >= 3 ? parts.slice(0, parts.length - 2).join(':') : '0.0.0.0';
  return host ? `${ip}:${host}` : undefined;
}

/** A service's environment as the container gets it: a key without a value (passed through from an unset shell variable) is absent. */
function definedOf(env: Record<string, string | null>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

const TEXT = readFileSync(COMPOSE_FILE, 'utf8');

describe('docker-compose.yml as Docker Compose v2 loads it (no docker here)', () => {
  it('given the required variables set, when interpolated, then it is valid against the Compose Specification schema', () => {
    const file = load(TEXT, PASSWORDS);
    expect(schemaErrors(file)).toEqual([]);
    expect(Object.keys(file.services).sort()).toEqual(
      ['audit', 'cli', 'council', 'escalation', 'eventstore', 'intake', 'nats', 'resolver', 'sweeper'].sort(),
    );
  });

  it('given the file as written (merge keys resolved, variables not yet substituted), then it is valid against the schema too', () => {
    expect(schemaErrors(parseCompose(TEXT))).toEqual([]);
  });

  it('given one of the required variables (a password, the council’s key) unset, when interpolated, then compose refuses it, naming the variable', () => {
    for (const missing of REQUIRED_VARIABLES) {
      const env = { ...PASSWORDS, [missing]: undefined };
      let error: unknown;
      try {
        load(TEXT, env);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(InterpolationError);
      expect((error as InterpolationError).variable).toBe(missing);
    }
    const required = new Set([...TEXT.matchAll(/\$\{([A-Za-z0-9_]+):?\?/g)].map((m) => m[1]));
    expect([...required].sort()).toEqual([...REQUIRED_VARIABLES].sort());
  });

  it('then it passes what Compose v2 checks and podman-compose ignores: dependencies, healthchecks behind service_healthy, profiles, volumes, secrets, durations, host ports', () => {
    const file = load(TEXT, PASSWORDS);
    expect(composeV2Problems(file)).toEqual([]);
    // Every service of the default `up` waits for a healthy NATS, which has a healthcheck.
    for (const name of ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit']) {
      expect(dependsOn(file.services[name])).toEqual([{ on: 'nats', condition: 'service_healthy', required: true }]);
      expect(file.services[name].profiles).toBeUndefined();
    }
    expect(file.services['nats'].healthcheck?.test).toBeDefined();
    expect(file.services['eventstore'].profiles).toEqual(['eventstore']);
    expect(file.services['cli'].profiles).toEqual(['tools']);
  });

  it('then the council service posts as its own participant: its key is a secret mounted where CONCLAVE_COUNCIL_KEY_FILE points, and it registers itself in the bridge domains passed through', () => {
    const file = load(TEXT, PASSWORDS);
    const council = file.services['council'];
    const env = council.environment ?? {};
    expect(env['CONCLAVE_COUNCIL_PARTICIPANT']).toBe('council-service');
    // Passed through from the shell: a key without a value. (`${VAR:-}` would not do: podman-compose
    // 1.0.3 substitutes a default only when it is not empty, and leaves the text as it is otherwise.)
    expect(env['CONCLAVE_COUNCIL_BRIDGE_DOMAINS']).toBeNull();
    expect(TEXT).not.toMatch(/\$\{[A-Za-z_][A-Za-z0-9_]*:?-\}/);
    // A secret without a target is mounted at /run/secrets/<name> (Compose v2 and podman-compose 1.0.3 alike).
    expect(council.secrets).toEqual(['council-service-key']);
    expect(env['CONCLAVE_COUNCIL_KEY_FILE']).toBe('/run/secrets/council-service-key');
    expect(file.secrets?.['council-service-key']).toEqual({ file: COUNCIL_KEY });
    // The service reads every one of them, and accepts the values (its own config class), with the
    // domains set in the shell or not.
    const withDomains = loadConfig(CouncilConfig, { ...definedOf(env), CONCLAVE_COUNCIL_BRIDGE_DOMAINS: 'billing,ops' });
    expect(withDomains).toMatchObject({
      bridgeParticipant: 'council-service',
      bridgeKeyFile: '/run/secrets/council-service-key',
      bridgeDomains: 'billing,ops',
    });
    expect(loadConfig(CouncilConfig, definedOf(env)).bridgeDomains).toBeUndefined();
    // No other service gets the key.
    for (const [name, s] of Object.entries(file.services))
      if (name !== 'council') expect({ name, secrets: s.secrets }).toEqual({ name, secrets: undefined });
  });

  it('then every healthcheck is one CMD-SHELL command, the form both Compose v2 and podman-compose 1.0.3 run alike', () => {
    const file = load(TEXT, PASSWORDS);
    for (const [name, s] of Object.entries(file.services)) {
      if (!s.healthcheck) continue;
      expect({ name, test: s.healthcheck.test }).toEqual({ name, test: ['CMD-SHELL', expect.any(String)] });
    }
  });

  describe('the checks themselves, on broken copies of the file', () => {
    it('given an unknown service key, then the schema refuses it', () => {
      const broken = TEXT.replace(
        '  intake:\n    <<: *conclave-service\n',
        '  intake:\n    <<: *conclave-service\n    restart_policy: always\n',
      );
      expect(broken).not.toBe(TEXT);
      expect(schemaErrors(load(broken, PASSWORDS))).toContain('/services/intake must NOT have additional properties');
    });

    it('given service_healthy on a service without a healthcheck, a dependency behind a profile, an undeclared volume or secret, a bad duration and a port published twice, then each is named', () => {
      const file = load(TEXT, PASSWORDS);
      delete file.services['nats'].healthcheck;
      file.services['audit'].depends_on = { eventstore: { condition: 'service_started' } };
      file.services['council'].volumes = ['council-data:/data'];
      file.services['resolver'].stop_grace_period = '30 seconds';
      file.services['sweeper'].ports = ['127.0.0.1:8081:8083'];
      file.services['escalation'].secrets = ['escalation-key'];
      const problems = composeV2Problems(file);
      expect(problems).toEqual(
        expect.arrayContaining([
          'intake: depends_on nats with service_healthy, but nats has no healthcheck',
          'audit (no profile) depends_on eventstore, which runs only with profile eventstore',
          'council: volume council-data is not declared under volumes',
          'resolver: stop_grace_period "30 seconds" is not a duration Compose can parse',
          'sweeper: host port 127.0.0.1:8081 is published by intake too',
          'escalation: secret escalation-key is not declared under secrets',
        ]),
      );
    });
  });
});
