import { DynamicModule, INestApplication, Logger, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NatsConnection } from 'nats';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import { PlainJsonNatsServer } from '@conclave/messaging';
import { NATS_CONNECTION, REQUEST_OBSERVER } from './tokens';
import { ServiceConfig } from './service-config';
import { loggingModule } from './logging';
import type { RequestObserver } from './metrics-requests';
import { startTracing, tracingWantedBy } from './tracing';
import { applyHttpEdge } from './http-edge';
import { Readiness } from './readiness';
import { StartProgress, watchStart } from './start-watch';

export interface BootstrapOptions {
  name: string;
  module: Type<unknown> | ReturnType<typeof Object>;
  config: ServiceConfig;
  /** Serve `@MessagePattern` handlers on `<prefix>.<pattern>` in this queue group. */
  commands?: { subjectPrefix: string; queue: string; maxPayloadBytes: number };
  /** Where log lines go instead of stdout (tests). */
  logDestination?: NodeJS.WritableStream;
}

/**
 * NestFactory.create under a watchdog: a process that never finishes creating its providers
 * (seen under sustained load after repeated kill -9, cause not yet known) logs what it was doing
 * and exits 70, so that the orchestrator restarts it, instead of hanging unready for ever.
 */
async function createWithin(root: DynamicModule, options: BootstrapOptions): Promise<INestApplication> {
  const { createTimeoutMs, exitOnFatal } = options.config;
  const watchdog = setTimeout(() => {
    const line = {
      level: 'fatal',
      time: new Date().toISOString(),
      service: options.name,
      context: 'Bootstrap',
      msg: `the application was not created within ${createTimeoutMs} ms (NATS connection, event log, checkpoint and snapshot stores)${exitOnFatal === 'true' ? ': exiting to be restarted' : ''}`,
    };
    process.stderr.write(`${JSON.stringify(line)}\n`);
    if (exitOnFatal !== 'true') return;
    // What it was waiting for (open handles, native stack) goes to a report beside the logs.
    try {
      process.report?.writeReport();
    } catch {
      // best effort
    }
    process.exit(70);
  }, createTimeoutMs);
  try {
    return await NestFactory.create(root, { bufferLogs: true });
  } finally {
    clearTimeout(watchdog);
  }
}

/** The service's module under the logger. */
@Module({})
class ServiceRoot {}

/**
 * The one way a Conclave service starts: structured logs, HTTP for health and metrics, an
 * optional plain-JSON NATS command server (measured, and each request's ids on its log lines),
 * shutdown hooks for a graceful drain on SIGTERM.
 */
export async function bootstrapService(options: BootstrapOptions): Promise<INestApplication> {
  const instrumented = options.config.instrumentation !== 'off';
  if (instrumented && tracingWantedBy(process.env)) startTracing(options.name);
  const root: DynamicModule = {
    module: ServiceRoot,
    imports: [loggingModule(options.name, options.config, options.logDestination), options.module as DynamicModule],
  };
  const app = await createWithin(root, options);
  app.useLogger(app.get(PinoNestLogger));
  const logger = new Logger(options.name);
  // SIGTERM (the orchestrator) and SIGINT (a terminal) drain the service; not every signal Nest
  // knows: SIGUSR2 is the diagnostic report's, and must leave a stuck process as it is.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  const endWatch = watchStart(app.get(StartProgress), app.get(Readiness), {
    service: options.name,
    stallMs: options.config.startStallMs,
    exitOnFatal: options.config.exitOnFatal === 'true',
  });
  try {
    await startServing(app, options);
  } finally {
    endWatch();
  }
  logger.log(`${options.name} ready on ${await app.getUrl()}`);
  return app;
}

/** The command server and HTTP, after the bootstrap hooks (catch-up) that `listen` runs. */
async function startServing(app: INestApplication, options: BootstrapOptions): Promise<void> {
  if (options.commands) {
    app.connectMicroservice(
      {
        strategy: new PlainJsonNatsServer({
          connection: app.get<NatsConnection>(NATS_CONNECTION),
          ...options.commands,
          observer: app.get<RequestObserver>(REQUEST_OBSERVER),
        }),
      },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
  }
  // Before listen: the router takes its global filters when it is set up.
  applyHttpEdge(app);
  await app.listen(options.config.httpPort, options.config.httpHost);
  if (options.commands && options.config.authMode === 'off') {
    new Logger(options.name).warn('AUTHENTICATION IS OFF (CONCLAVE_AUTH_MODE=off): any client can act as any participant. Local use only.');
  }
}
