import { Expose, Type } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';
import { AuthenticatedServiceConfig } from '@conclave/service-kit';

export class CouncilConfig extends AuthenticatedServiceConfig {
  /** Largest request body on the command subjects (start carries a panel and a contract). */
  @Expose({ name: 'CONCLAVE_COUNCIL_MAX_PAYLOAD_BYTES' })
  @Type(() => Number)
  @IsInt()
  @Min(1024)
  @Max(8 * 1024 * 1024)
  maxPayloadBytes = 262_144;

  /** Back-off before the controller retries a step after the event log was unavailable. */
  @Expose({ name: 'CONCLAVE_COUNCIL_RETRY_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(10)
  retryMs = 500;

  /**
   * How long a replica's lease on a run lasts without renewal (renewed every third of it): one
   * replica drives a run; when it dies, another takes the run over after at most this long.
   */
  @Expose({ name: 'CONCLAVE_COUNCIL_LEASE_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(300)
  leaseMs = 10_000;

  override httpPort = 8085;
}
