import { INestApplication } from '@nestjs/common';
import { acpStreamNames } from '@conclave/messaging';
import { ConclaveClient, ConclaveClientOptions } from '@conclave/sdk';
import { loadConfig } from '@conclave/service-kit';
import { createHash } from 'node:crypto';
import { connect, headers as natsHeaders, NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { IntakeConfig } from '../../apps/intake/src/app/intake.config';
import { startIntake } from '../../apps/intake/src/app/intake.app';
import { ResolverConfig } from '../../apps/resolver/src/app/resolver.config';
import { startResolver } from '../../apps/resolver/src/app/resolver.app';
import { SweeperConfig } from '../../apps/sweeper/src/app/sweeper.config';
import { startSweeper } from '../../apps/sweeper/src/app/sweeper.app';
import { EscalationConfig } from '../../apps/escalation/src/app/escalation.config';
import { startEscalation } from '../../apps/escalation/src/app/escalation.app';
import { CouncilConfig } from '../../apps/council/src/app/council.config';
import { AuditConfig } from '../../apps/audit/src/app/audit.config';
import { startAudit } from '../../apps/audit/src/app/audit.app';
import { ed25519Signer, generateParticipantKeys, ParticipantKeyPair } from '@conclave/sdk';
import { AUDIT_PATTERNS, AuditEntry, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { startCouncil } from '../../apps/council/src/app/council.app';
import { runEnv } from './run-env';

export const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

export type ServiceName = 'intake' | 'resolver' | 'sweeper' | 'council' | 'escalation' | 'audit';

const starters: Record<ServiceName, (env: Record<string, string>) => Promise<INestApplication>> = {
  intake: (env) => startIntake(loadConfig(IntakeConfig, env)),
  resolver: (env) => startResolver(loadConfig(ResolverConfig, env)),
  sweeper: (env) => startSweeper(loadConfig(SweeperConfig, env)),
  council: (env) => startCouncil(loadConfig(CouncilConfig, env)),
  escalation: (env) => startEscalation(loadConfig(EscalationConfig, env)),
  audit: (env) => startAudit(loadConfig(AuditConfig, env)),
};

export interface Instance {
  name: ServiceName;
  app: INestApplication;
}

/**
 * Real services, booted in this process against the real NATS server, under names of their own:
 * subject prefix, event stream, consumer streams and KV bucket carry a fresh ULID, and `stop()`
 * deletes them, so test runs share the server without seeing each other.
 */
export class ConclaveHarness {
  readonly run = ulid();
  readonly prefix = `t${this.run.toLowerCase()}`;
  readonly env: Record<string, string>;
  readonly instances: Instance[] = [];
  nc!: NatsConnection;
  client!: ConclaveClient;

  constructor(extraEnv: Record<string, string> = {}) {
    this.env = {
      ...runEnv(this.run, NATS_URL),
      // The shared test server runs without accounts; security-nats e2e covers a server with them.
      CONCLAVE_INSECURE_OPEN_NATS: 'true',
      // In-process services must not end the test runner; a fatal reactor shows as not ready.
      CONCLAVE_EXIT_ON_FATAL: 'false',
      HTTP_PORT: '0',
      ...extraEnv,
    };
  }

  async start(...names: ServiceName[]): Promise<this> {
    this.nc = await connect({ servers: NATS_URL });
    this.client = await ConclaveClient.connect({ nc: this.nc, prefix: this.prefix, streamSuffix: this.run });
    for (const name of names) await this.add(name);
    return this;
  }

  /** Starts one more instance (a replica when one runs already). */
  async add(name: ServiceName): Promise<Instance> {
    const instance = { name, app: await starters[name](this.env) };
    this.instances.push(instance);
    return instance;
  }

  /**
   * A plain JSON request over NATS with exactly these headers (none: an anonymous caller), the
   * body as given when it is bytes already (a captured request): the reply parsed and as sent.
   */
  async rawRequest<R = ApiReply>(subject: string, body: unknown, headers?: Record<string, string>): Promise<{ reply: R; text: string }> {
    const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(JSON.stringify(body));
    let hdrs;
    if (headers) {
      hdrs = natsHeaders();
      for (const [k, v] of Object.entries(headers)) hdrs.set(k, v);
    }
    const m = await this.nc.request(subject, bytes, { timeout: 15_000, ...(hdrs ? { headers: hdrs } : {}) });
    const text = new TextDecoder().decode(m.data);
    return { reply: JSON.parse(text) as R, text };
  }

  /** The event log's last sequence: it moves with any append, by any service. */
  async logHead(): Promise<number> {
    const jsm = await this.nc.jetstreamManager();
    return (await jsm.streams.info(this.env['CONCLAVE_EVENT_STREAM'])).state.last_seq;
  }

  /** Stops an instance gracefully (the SIGTERM path). */
  async kill(instance: Instance): Promise<void> {
    await instance.app.close();
    this.instances.splice(this.instances.indexOf(instance), 1);
  }

  async stop(): Promise<void> {
    for (const i of [...this.instances].reverse()) await i.app.close().catch(() => undefined);
    this.instances.length = 0;
    const jsm = await this.nc.jetstreamManager();
    const streams = acpStreamNames(this.run);
    const names = [
      this.env['CONCLAVE_EVENT_STREAM'],
      streams.decisions,
      streams.proposals,
      streams.escalations,
      streams.councilDecisions,
      streams.councilTasks,
      streams.councilOutcomes,
      `KV_EVT_${this.run}_CHECKPOINTS`,
      `EVT_${this.run}_AUDIT`,
      `EVT_${this.run}_REJECTIONS`,
      `KV_EVT_${this.run}_NONCES`,
      `KV_EVT_${this.run}_LEASES`,
    ];
    for (const name of names) await jsm.streams.delete(name).catch(() => undefined);
    await this.nc.drain();
  }
}

/** A reply of the NATS API as a test reads it: `{ok: true, ...}` or `{ok: false, error}`. */
export interface ApiReply {
  ok: boolean;
  error?: { code: string; field?: string; message?: string };
  [key: string]: unknown;
}

/** Resolves when `check` returns a value other than undefined, polling the system, or fails at the deadline. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A participant the secure harness registers, with its grants (DESIGN section 6). */
export interface SeededParticipant {
  participant_id: string;
  roles?: Array<'agent' | 'human-resolver' | 'administrator'>;
  clearance?: 'public' | 'internal' | 'confidential' | 'restricted';
  grants?: Array<{ domain: string; domain_authority: number; trust_score: number; actions?: string[] }>;
}

/**
 * The harness with CONCLAVE_AUTH_MODE=required: a bootstrap administrator (`admin`, its key made
 * here), a registry seeded through the signed registry API, and a signing client per participant.
 */
export class SecureConclaveHarness extends ConclaveHarness {
  readonly keys = new Map<string, ParticipantKeyPair>();
  readonly clients = new Map<string, ConclaveClient>();
  admin!: ConclaveClient;

  constructor(extraEnv: Record<string, string> = {}) {
    const admin = generateParticipantKeys();
    super({ CONCLAVE_AUTH_MODE: 'required', CONCLAVE_BOOTSTRAP_ADMIN: `admin=${admin.publicKey}`, ...extraEnv });
    this.keys.set('admin', admin);
  }

  override async start(...names: ServiceName[]): Promise<this> {
    await super.start(...names);
    this.admin = await this.clientFor('admin');
    return this;
  }

  /** The private key (PKCS#8 PEM) made for `id` when it was seeded. */
  privateKeyOf(id: string): string {
    const key = this.keys.get(id);
    if (!key) throw new Error(`no key seeded for ${id}`);
    return key.privateKeyPem;
  }

  /**
   * A plain JSON request over NATS signed by `id` with its Ed25519 key (unsigned when `id` is
   * undefined): the reply parsed and as sent, and the body's hash (as the audit log records it).
   */
  async signedRequest<R = Record<string, unknown>>(
    id: string | undefined,
    subject: string,
    body: unknown,
  ): Promise<{ reply: R; text: string; hash: string }> {
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const headers = id ? ed25519Signer(id, this.privateKeyOf(id))(subject, bytes) : {};
    return { ...(await this.rawRequest<R>(subject, bytes, headers)), hash: createHash('sha256').update(bytes).digest('hex') };
  }

  /** Registers each participant with a fresh key and its grants. */
  async seed(participants: SeededParticipant[]): Promise<void> {
    for (const p of participants) {
      const keys = generateParticipantKeys();
      this.keys.set(p.participant_id, keys);
      await this.admin.call(REGISTRY_PATTERNS.register, {
        participant_id: p.participant_id,
        roles: p.roles ?? ['agent'],
        public_key: keys.publicKey,
        ...(p.clearance ? { clearance: p.clearance } : {}),
      });
      for (const g of p.grants ?? []) await this.admin.call(REGISTRY_PATTERNS.grant, { participant_id: p.participant_id, ...g });
    }
  }

  /** The audit chain's entries matching `filter`, every page, as the administrator queries them. */
  async auditEntries(filter: Record<string, unknown>): Promise<AuditEntry[]> {
    const all: AuditEntry[] = [];
    let after: number | null = 0;
    while (after !== null) {
      const page: { entries: AuditEntry[]; next_after_seq: number | null } = await this.admin.call(AUDIT_PATTERNS.query, {
        ...filter,
        after_seq: after,
        limit: 1000,
      });
      all.push(...page.entries);
      after = page.next_after_seq;
    }
    return all;
  }

  /**
   * A client that signs as `participantId` (with its seeded key unless another is given), with the
   * SDK's defaults unless `options` are given (`rateLimitWaitMs: 0` to see every refusal).
   */
  async clientFor(participantId: string, privateKeyPem?: string, options: Partial<ConclaveClientOptions> = {}): Promise<ConclaveClient> {
    const key = privateKeyPem ?? this.keys.get(participantId)?.privateKeyPem;
    if (!key) throw new Error(`no key for ${participantId}`);
    const cacheable = privateKeyPem === undefined && Object.keys(options).length === 0;
    const existing = cacheable ? this.clients.get(participantId) : undefined;
    if (existing) return existing;
    const client = await ConclaveClient.connect({
      nc: this.nc,
      prefix: this.prefix,
      streamSuffix: this.run,
      signer: ed25519Signer(participantId, key),
      ...options,
    });
    if (cacheable) this.clients.set(participantId, client);
    return client;
  }
}
