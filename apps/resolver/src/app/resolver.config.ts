import { ServiceConfig } from '@conclave/service-kit';

export class ResolverConfig extends ServiceConfig {
  override httpPort = 8082;
}
