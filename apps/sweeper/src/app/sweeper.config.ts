import { Expose, Type } from 'class-transformer';
import { IsInt, Min } from 'class-validator';
import { ServiceConfig } from '@conclave/service-kit';

export class SweeperConfig extends ServiceConfig {
  /** The longest the timer queue sleeps: a wall-clock jump is noticed within this time. */
  @Expose({ name: 'CONCLAVE_SWEEP_INTERVAL_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(100)
  sweepIntervalMs = 30_000;

  override httpPort = 8083;
}
