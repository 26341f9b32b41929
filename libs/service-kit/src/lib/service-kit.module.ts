import { DynamicModule, Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, NatsConnection } from 'nats';
import { ConfigError } from './config';
import { HealthController } from './health.controller';
import { Readiness } from './readiness';
import { ServiceConfig } from './service-config';
import { createEventLog, eventLogProviders } from './event-log.provider';
import { ConclaveMetrics } from './metrics';
import { MeteredEventLog } from './metrics-event-log';
import { requestObserverFor } from './metrics-requests';
import { TracingFlush } from './tracing';
import { EVENT_LOG, FATAL, NATS_CONNECTION, REQUEST_OBSERVER, SERVICE_CONFIG, SERVICE_NAME } from './tokens';
import { fatalHandlerFor, Reactors } from './reactor';
import { runtimeProviders } from './runtime';
import { StartProgress } from './start-watch';
import type { EventLog } from '@conclave/event-log';

function readCreds(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError([`NATS_CREDS: cannot read ${path}: ${(err as Error).message}`]);
  }
}

/** Closes the event log, then drains the shared NATS connection, after the command server drained. */
@Injectable()
class NatsConnectionCloser implements OnApplicationShutdown {
  private readonly logger = new Logger('NATS');
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(EVENT_LOG) private readonly log: EventLog,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.log.close().catch((err: Error) => this.logger.warn(`event log close failed: ${err.message}`));
    if (!this.nc.isClosed()) {
      await this.nc.drain().catch((err: Error) => this.logger.warn(`drain failed: ${err.message}`));
    }
  }
}

/**
 * What every service has: its validated config, one NATS connection, the event log and its
 * checkpoint store, a clock and an id generator, readiness and the health/metrics endpoints.
 */
@Global()
@Module({})
export class ServiceKitModule {
  static forRoot(name: string, config: ServiceConfig): DynamicModule {
    return {
      module: ServiceKitModule,
      controllers: [HealthController],
      providers: [
        { provide: SERVICE_NAME, useValue: name },
        { provide: SERVICE_CONFIG, useValue: config },
        Readiness,
        {
          provide: NATS_CONNECTION,
          inject: [Readiness],
          useFactory: async (readiness: Readiness) => {
            const nc = await connect({
              servers: config.natsUrl,
              name: `conclave-${name}`,
              maxReconnectAttempts: -1,
              // A stack trace per request and publish costs ~9% of intake's CPU (profiled); errors keep their own.
              noAsyncTraces: true,
              ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword } : {}),
              ...(config.natsCreds ? { authenticator: credsAuthenticator(readCreds(config.natsCreds)) } : {}),
              ...(config.natsInboxPrefix ? { inboxPrefix: config.natsInboxPrefix } : {}),
            });
            readiness.register('nats', () => !nc.isClosed());
            return nc;
          },
        },
        ...runtimeProviders,
        ConclaveMetrics,
        ...eventLogProviders.filter((p) => (p as { provide: symbol }).provide !== EVENT_LOG),
        {
          // The log with its appends counted and timed.
          provide: EVENT_LOG,
          inject: [SERVICE_CONFIG, NATS_CONNECTION, ConclaveMetrics],
          useFactory: async (c: ServiceConfig, nc: NatsConnection, metrics: ConclaveMetrics) =>
            metrics.enabled ? new MeteredEventLog(await createEventLog(c, nc), metrics) : createEventLog(c, nc),
        },
        {
          provide: REQUEST_OBSERVER,
          inject: [SERVICE_CONFIG, ConclaveMetrics],
          useFactory: (c: ServiceConfig, metrics: ConclaveMetrics) => requestObserverFor(c, metrics),
        },
        NatsConnectionCloser,
        TracingFlush,
        { provide: FATAL, useValue: fatalHandlerFor(config) },
        Reactors,
        StartProgress,
      ],
      exports: [
        StartProgress,
        FATAL,
        Reactors,
        SERVICE_NAME,
        SERVICE_CONFIG,
        NATS_CONNECTION,
        Readiness,
        ConclaveMetrics,
        REQUEST_OBSERVER,
        ...runtimeProviders.map((p) => (p as { provide: symbol }).provide),
        ...eventLogProviders.map((p) => (p as { provide: symbol }).provide),
      ],
    };
  }
}
