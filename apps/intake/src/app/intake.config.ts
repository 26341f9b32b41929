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

  /**
   * How long a participant's rotation of its own key waits before it takes effect, during which
   * the current key keeps working and can cancel it: a thief of the key cannot lock the owner out
   * at once (docs/security.md). An administrator's rotation of another participant's key is
   * immediate. Default 24 hours.
   */
  @Expose({ name: 'CONCLAVE_KEY_ROTATION_COOLDOWN_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  @Max(30 * 24 * 3_600_000)
  keyRotationCooldownMs = 24 * 3_600_000;

  override httpPort = 8081;
}
