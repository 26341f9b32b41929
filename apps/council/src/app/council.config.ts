import { Expose, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
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

  /**
   * The bridge to ACP: the participant the council service posts decisions as (registered in
   * the participant registry with a grant to propose and escalate in the domains it bridges).
   */
  @Expose({ name: 'CONCLAVE_COUNCIL_PARTICIPANT' })
  @Matches(/^[A-Za-z0-9_.:@-]{1,60}$/)
  bridgeParticipant = 'council-service';

  /**
   * That participant's Ed25519 private key (PKCS#8 PEM file): the service signs its own ACP
   * commands with it, never anyone else's. Required for the bridge when authentication is on.
   */
  @Expose({ name: 'CONCLAVE_COUNCIL_KEY_FILE' })
  @IsOptional()
  @IsString()
  bridgeKeyFile?: string;

  /**
   * The domains the bridge posts in, comma-separated. With a key, the service registers its own
   * participant at start when the registry does not have it yet (as intake does for
   * CONCLAVE_BOOTSTRAP_ADMIN), granted `propose` and `escalate` in each of them; a participant
   * already registered is never changed here (the registry's administrators own it). Empty: no
   * registration, an administrator registers it.
   */
  @Expose({ name: 'CONCLAVE_COUNCIL_BRIDGE_DOMAINS' })
  @IsOptional()
  @Matches(/^$|^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*(,[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)*$/)
  bridgeDomains?: string;

  override httpPort = 8085;
}
