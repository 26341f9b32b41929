import { INestApplication } from '@nestjs/common';
import { bootstrapService } from '@conclave/service-kit';
import { QUEUE_GROUPS } from '@conclave/messaging';
import { IntakeConfig } from './intake.config';
import { IntakeModule } from './intake.module';

/** Starts intake: the agents' command API on `<prefix>.v1.*`, in the intake queue group. */
export function startIntake(config: IntakeConfig): Promise<INestApplication> {
  return bootstrapService({
    name: 'intake',
    module: IntakeModule.register(config),
    config,
    commands: { subjectPrefix: config.subjectPrefix, queue: QUEUE_GROUPS.intake, maxPayloadBytes: config.maxPayloadBytes },
  });
}
