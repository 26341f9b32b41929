import { INestApplication } from '@nestjs/common';
import { bootstrapService } from '@conclave/service-kit';
import { QUEUE_GROUPS } from '@conclave/messaging';
import { CouncilConfig } from './council.config';
import { CouncilModule } from './council.module';

/** Starts the Council controller: the command API on `<council prefix>.v1.*`, in the council queue group. */
export function startCouncil(config: CouncilConfig): Promise<INestApplication> {
  return bootstrapService({
    name: 'council',
    module: CouncilModule.register(config),
    config,
    commands: { subjectPrefix: config.councilPrefix, queue: QUEUE_GROUPS.council, maxPayloadBytes: config.maxPayloadBytes },
  });
}
