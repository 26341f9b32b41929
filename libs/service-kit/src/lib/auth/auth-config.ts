import { Expose, Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { ServiceConfig } from '../service-config';

/**
 * Configuration of a service that authenticates commands (intake, escalation, audit). Extend
 * it instead of ServiceConfig; a service on plain ServiceConfig gets the defaults below.
 */
export class AuthenticatedServiceConfig extends ServiceConfig {
  /** Accepted clock difference between a signed command's timestamp and the service (14.4). */
  @Expose({ name: 'CONCLAVE_AUTH_SKEW_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  @Max(600_000)
  authSkewMs = 30_000;

  /**
   * Where a response's domain_authority and trust_score come from: `registry` (default: a
   * response declaring other values is FORBIDDEN) or `declared` (open mode: declared values are
   * taken and the reply marks them `source: declared`). With CONCLAVE_AUTH_MODE=off declared
   * values are always taken.
   */
  @Expose({ name: 'CONCLAVE_RESPONSE_FACTORS' })
  @IsIn(['registry', 'declared'])
  responseFactors: 'registry' | 'declared' = 'registry';

  /**
   * `<participant_id>=<ed25519 public key, base64url>`: registered as an administrator at start
   * when that participant does not exist yet, so that a fresh deployment has someone who can
   * register the others (`conclave participants keygen` prints such a line).
   */
  @Expose({ name: 'CONCLAVE_BOOTSTRAP_ADMIN' })
  @IsOptional()
  @Matches(/^[A-Za-z0-9_.:@-]{1,60}=[A-Za-z0-9_-]{43}$/)
  bootstrapAdmin?: string;

  /**
   * With CONCLAVE_AUTH_MODE=required a service refuses to start on a NATS server that does not
   * authenticate its clients: anyone could then publish events, rejection records or replies
   * directly. `true` lets it start anyway, with a warning (the shared test server only).
   */
  @Expose({ name: 'CONCLAVE_INSECURE_OPEN_NATS' })
  @IsIn(['true', 'false'])
  insecureOpenNats: 'true' | 'false' = 'false';

  /**
   * Authenticated commands accepted per participant and second, sustained, by each replica
   * (one participant's flood is refused RATE_LIMITED with a retry hint; others go on).
   */
  @Expose({ name: 'CONCLAVE_RATE_LIMIT_PER_SECOND' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  rateLimitPerSecond = 100;

  /** How many commands a participant may send at once after a quiet spell. */
  @Expose({ name: 'CONCLAVE_RATE_LIMIT_BURST' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  rateLimitBurst = 500;
}

export interface AuthSettings {
  authMode: 'required' | 'off';
  authSkewMs: number;
  responseFactors: 'registry' | 'declared';
  bootstrapAdmin?: { participant_id: string; public_key: string };
  insecureOpenNats: boolean;
  rateLimit: { perSecond: number; burst: number };
}

export function authSettingsOf(config: ServiceConfig): AuthSettings {
  const c = config as Partial<AuthenticatedServiceConfig>;
  const [id, key] = c.bootstrapAdmin ? c.bootstrapAdmin.split('=') : [];
  return {
    authMode: config.authMode,
    authSkewMs: c.authSkewMs ?? 30_000,
    responseFactors: c.responseFactors ?? 'registry',
    insecureOpenNats: c.insecureOpenNats === 'true',
    rateLimit: { perSecond: c.rateLimitPerSecond ?? 100, burst: c.rateLimitBurst ?? 500 },
    ...(id && key ? { bootstrapAdmin: { participant_id: id, public_key: key } } : {}),
  };
}
