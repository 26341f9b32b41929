import { INestApplication } from '@nestjs/common';
import { bootstrapService } from '@conclave/service-kit';
import { ResolverConfig } from './resolver.config';
import { ResolverModule } from './resolver.module';

/** Starts the resolver: quorum resolutions, parent/child resolution, and the decision outbox. */
export function startResolver(config: ResolverConfig): Promise<INestApplication> {
  return bootstrapService({ name: 'resolver', module: ResolverModule.register(config), config });
}
