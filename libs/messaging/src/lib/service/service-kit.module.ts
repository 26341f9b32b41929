import { DynamicModule, Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { connect, NatsConnection } from 'nats';
import { HealthController } from './health.controller';
import { Readiness } from './readiness';
import { ServiceConfig } from './service-config';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');
export const SERVICE_CONFIG = Symbol('SERVICE_CONFIG');
export const SERVICE_NAME = Symbol('SERVICE_NAME');

/** Drains the shared NATS connection last, after the command server has drained. */
@Injectable()
class NatsConnectionCloser implements OnApplicationShutdown {
  private readonly logger = new Logger('NATS');
  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  async onApplicationShutdown(): Promise<void> {
    if (!this.nc.isClosed()) {
      await this.nc.drain().catch((err: Error) => this.logger.warn(`drain failed: ${err.message}`));
    }
  }
}

/**
 * What every service has: its validated config, one NATS connection, readiness and the
 * health/metrics endpoints.
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
              ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword } : {}),
            });
            readiness.register('nats', () => !nc.isClosed());
            return nc;
          },
        },
        NatsConnectionCloser,
      ],
      exports: [SERVICE_NAME, SERVICE_CONFIG, NATS_CONNECTION, Readiness],
    };
  }
}
