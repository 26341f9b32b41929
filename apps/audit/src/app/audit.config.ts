import { AuthenticatedServiceConfig } from '@conclave/service-kit';
import { Expose, Type } from 'class-transformer';
import { IsInt, Min } from 'class-validator';

export class AuditConfig extends AuthenticatedServiceConfig {
  override httpPort = 8086;

  /**
   * The audit chain has one writer: the replica holding the `audit-chain` lease, renewed every
   * third of this. When it dies, a standby takes over at most this long after its last renewal.
   */
  @Expose({ name: 'CONCLAVE_AUDIT_LEASE_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(300)
  leaseMs = 10_000;
}
