import { INestApplication, Logger } from '@nestjs/common';
import { QUEUE_GROUPS } from '@conclave/messaging';
import { bootstrapService } from '@conclave/service-kit';
import { EscalationConfig, escalationSettingsFrom } from './escalation.config';
import { EscalationModule } from './escalation.module';

/**
 * Starts the escalation service: `<prefix>.v1.resolve` and the inbox queries on NATS (escalation
 * queue group), the HTTP API, the web console, the ladder timer and the notifications.
 */
export async function startEscalation(config: EscalationConfig): Promise<INestApplication> {
  const settings = escalationSettingsFrom(config);
  const app = await bootstrapService({
    name: 'escalation',
    module: EscalationModule.register(config, settings),
    config,
    commands: { subjectPrefix: config.subjectPrefix, queue: QUEUE_GROUPS.escalation, maxPayloadBytes: config.maxPayloadBytes },
  });
  if (config.authMode === 'required' && settings.humanTokens.size === 0) {
    new Logger('escalation').warn('CONCLAVE_AUTH_MODE=required and no CONCLAVE_HUMAN_TOKENS: nobody can resolve an escalation');
  }
  return app;
}
