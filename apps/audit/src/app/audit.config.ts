import { AuthenticatedServiceConfig } from '@conclave/service-kit';

export class AuditConfig extends AuthenticatedServiceConfig {
  override httpPort = 8086;
}
