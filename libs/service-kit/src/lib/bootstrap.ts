import { ConsoleLogger, INestApplication, LogLevel, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NatsConnection } from 'nats';
import { PlainJsonNatsServer } from '@conclave/messaging';
import { NATS_CONNECTION } from './tokens';
import { ServiceConfig } from './service-config';

const LEVELS: Record<string, LogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  log: ['fatal', 'error', 'warn', 'log'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  verbose: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

export interface BootstrapOptions {
  name: string;
  module: Type<unknown> | ReturnType<typeof Object>;
  config: ServiceConfig;
  /** Serve `@MessagePattern` handlers on `<prefix>.<pattern>` in this queue group. */
  commands?: { subjectPrefix: string; queue: string; maxPayloadBytes: number };
}

/**
 * The one way a Conclave service starts: HTTP for health and metrics, an optional plain-JSON
 * NATS command server, shutdown hooks for a graceful drain on SIGTERM.
 */
export async function bootstrapService(options: BootstrapOptions): Promise<INestApplication> {
  const logger = new ConsoleLogger(options.name, {
    json: options.config.logFormat === 'json',
    logLevels: LEVELS[options.config.logLevel],
  });
  const app = await NestFactory.create(options.module as Type<unknown>, { logger, bufferLogs: true });
  app.enableShutdownHooks();
  if (options.commands) {
    app.connectMicroservice(
      {
        strategy: new PlainJsonNatsServer({
          connection: app.get<NatsConnection>(NATS_CONNECTION),
          ...options.commands,
        }),
      },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
  }
  await app.listen(options.config.httpPort, options.config.httpHost);
  if (options.commands && options.config.authMode === 'off') {
    logger.warn('AUTHENTICATION IS OFF (CONCLAVE_AUTH_MODE=off): any client can act as any participant. Local use only.');
  }
  logger.log(`${options.name} ready on ${await app.getUrl()}`);
  return app;
}
