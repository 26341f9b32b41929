import { Expose, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { AcpError, EscalationRoute, parseEscalationRoutes } from '@conclave/acp-protocol';
import { isParticipantId } from '@conclave/registry-protocol';
import { AuthenticatedServiceConfig, ConfigError } from '@conclave/service-kit';

export class EscalationConfig extends AuthenticatedServiceConfig {
  /** Largest request body on `acp.v1.resolve` and the HTTP API. */
  @Expose({ name: 'CONCLAVE_MAX_PAYLOAD_BYTES' })
  @Type(() => Number)
  @IsInt()
  @Min(256)
  @Max(8 * 1024 * 1024)
  maxPayloadBytes = 65_536;

  /**
   * Per-domain routing (JSON array): `{id, domain_prefix?, assignees?, ladder?, sign_off?}`, see
   * docs/escalation.md. Without it every escalation is routed to nobody in particular, with no ladder.
   */
  @Expose({ name: 'CONCLAVE_ESCALATION_ROUTES' })
  @IsOptional()
  @IsString()
  escalationRoutesJson?: string;

  /**
   * Bearer tokens for people on HTTP and the console: JSON `{"<token>": "<participant id>"}`.
   * A token only says which registered participant is asking: that participant must be active
   * in the registry, and is authorized (human-resolver role, grants, clearance) and audited like
   * a signed request. Tokens of at least 32 characters; prefer signed requests (NATS, CLI).
   */
  @Expose({ name: 'CONCLAVE_HUMAN_TOKENS' })
  @IsOptional()
  @IsString()
  humanTokensJson?: string;

  /** Safety net under the ladder timer: re-examine every open escalation this often. */
  @Expose({ name: 'CONCLAVE_LADDER_SWEEP_INTERVAL_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(50)
  ladderSweepIntervalMs = 30_000;

  /** The console's live feed starts with the decisions of this last period. */
  @Expose({ name: 'CONCLAVE_FEED_HISTORY_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(0)
  feedHistoryMs = 15 * 60_000;

  override httpPort = 8084;

  /** The API and console serve people: loopback unless a deployment chooses otherwise. */
  override httpHost = '127.0.0.1';
}

/** What the escalation service reads from its configuration beyond plain values, validated at start. */
export interface EscalationSettings {
  routes: EscalationRoute[];
  /** token → participant id */
  humanTokens: Map<string, string>;
}

export const ESCALATION_SETTINGS = Symbol('ESCALATION_SETTINGS');

/** A human-chosen 8-character token falls to guessing; 32 random characters do not. */
export const MIN_TOKEN_LENGTH = 32;

export function escalationSettingsFrom(config: EscalationConfig): EscalationSettings {
  const problems: string[] = [];
  let routes: EscalationRoute[] = [];
  if (config.escalationRoutesJson) {
    try {
      routes = parseEscalationRoutes(JSON.parse(config.escalationRoutesJson));
    } catch (err) {
      const why = err instanceof AcpError ? `${err.field ?? ''}: ${err.message}` : (err as Error).message;
      problems.push(`CONCLAVE_ESCALATION_ROUTES: ${why}`);
    }
  }
  const humanTokens = new Map<string, string>();
  if (config.humanTokensJson) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(config.humanTokensJson);
    } catch {
      // The parser's message quotes the text around the error: part of a secret.
      problems.push('CONCLAVE_HUMAN_TOKENS: not valid JSON (contents not shown: they are secrets)');
    }
    if (parsed !== undefined) {
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        problems.push('CONCLAVE_HUMAN_TOKENS: must be a JSON object {"<token>": "<human id>"}');
      } else {
        for (const [token, human] of Object.entries(parsed)) {
          if (token.length < MIN_TOKEN_LENGTH)
            problems.push(`CONCLAVE_HUMAN_TOKENS: a token must have at least ${MIN_TOKEN_LENGTH} characters`);
          else if (typeof human !== 'string' || !isParticipantId(human))
            problems.push('CONCLAVE_HUMAN_TOKENS: each value must be a participant id');
          else humanTokens.set(token, human);
        }
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { routes, humanTokens };
}
