import { Expose, Type } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';
import { AuthenticatedServiceConfig } from '@conclave/service-kit';

export class IntakeConfig extends AuthenticatedServiceConfig {
  /** Largest request body; larger ones get PAYLOAD_TOO_LARGE and change nothing. */
  @Expose({ name: 'CONCLAVE_MAX_PAYLOAD_BYTES' })
  @Type(() => Number)
  @IsInt()
  @Min(256)
  @Max(8 * 1024 * 1024)
  maxPayloadBytes = 65_536;

  @Expose({ name: 'CONCLAVE_LIST_MAX_LIMIT' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  listMaxLimit = 500;

  override httpPort = 8081;
}
