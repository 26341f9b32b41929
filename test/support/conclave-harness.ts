import { INestApplication } from '@nestjs/common';
import { acpStreamNames } from '@conclave/messaging';
import { ConclaveClient } from '@conclave/sdk';
import { loadConfig } from '@conclave/service-kit';
import { connect, NatsConnection } from 'nats';
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
import { startCouncil } from '../../apps/council/src/app/council.app';

export const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';

export type ServiceName = 'intake' | 'resolver' | 'sweeper' | 'council' | 'escalation';

const starters: Record<ServiceName, (env: Record<string, string>) => Promise<INestApplication>> = {
  intake: (env) => startIntake(loadConfig(IntakeConfig, env)),
  resolver: (env) => startResolver(loadConfig(ResolverConfig, env)),
  sweeper: (env) => startSweeper(loadConfig(SweeperConfig, env)),
  council: (env) => startCouncil(loadConfig(CouncilConfig, env)),
  escalation: (env) => startEscalation(loadConfig(EscalationConfig, env)),
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
      NATS_URL,
      CONCLAVE_SUBJECT_PREFIX: this.prefix,
      CONCLAVE_COUNCIL_PREFIX: `c${this.prefix}`,
      CONCLAVE_EVENT_STREAM: `EVT_${this.run}`,
      CONCLAVE_EVENT_SUBJECT_PREFIX: `evt${this.run.toLowerCase()}`,
      CONCLAVE_STREAM_SUFFIX: this.run,
      CONCLAVE_AUTH_MODE: 'off',
      CONCLAVE_EXPIRY_GRACE_MS: '0',
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
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
    const names = [this.env['CONCLAVE_EVENT_STREAM'], streams.decisions, streams.proposals, streams.escalations, streams.councilDecisions, `KV_EVT_${this.run}_CHECKPOINTS`];
    for (const name of names) await jsm.streams.delete(name).catch(() => undefined);
    await this.nc.drain();
  }
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
