import { INestApplication } from '@nestjs/common';
import { bootstrapService } from '@conclave/service-kit';
import { SweeperConfig } from './sweeper.config';
import { SweeperModule } from './sweeper.module';

/** Starts the expiry sweeper (RFC 8). */
export function startSweeper(config: SweeperConfig): Promise<INestApplication> {
  return bootstrapService({ name: 'sweeper', module: SweeperModule.register(config), config });
}
