import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { ConfigError } from '../config';
import { ServiceConfig } from '../service-config';
import { NATS_CONNECTION, SERVICE_CONFIG } from '../tokens';
import { authSettingsOf } from './auth-config';

/**
 * Authentication of commands means nothing on a NATS server that lets anyone connect: an
 * anonymous client could publish registry events, rejection records or other clients' replies
 * directly. With CONCLAVE_AUTH_MODE=required the service refuses to start unless the server
 * required credentials of this connection (CONCLAVE_INSECURE_OPEN_NATS=true overrides it, loudly).
 */
@Injectable()
export class NatsAuthCheck implements OnModuleInit {
  private readonly logger = new Logger('NATS');

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  onModuleInit(): void {
    const settings = authSettingsOf(this.config);
    if (settings.authMode !== 'required' || this.nc.info?.auth_required === true) return;
    if (settings.insecureOpenNats) {
      this.logger.warn(
        'NATS DOES NOT AUTHENTICATE CLIENTS (CONCLAVE_INSECURE_OPEN_NATS=true): anyone on the bus can forge events and replies. Tests only.',
      );
      return;
    }
    throw new ConfigError([
      'CONCLAVE_AUTH_MODE=required but the NATS server did not authenticate this connection: run NATS with accounts (deploy/nats) and give the service credentials (NATS_USER/NATS_PASSWORD)',
    ]);
  }
}
