import { Provider } from '@nestjs/common';
import { AcpError, DEFAULT_DECIDER_CONFIG, DeciderConfig, parseEscalationPolicies } from '@conclave/acp-protocol';
import { newUlid } from '@conclave/messaging';
import { ConfigError } from './config';
import { CLOCK, DECIDER_CONFIG, IDS, SERVICE_CONFIG } from './tokens';
import { ServiceConfig } from './service-config';

/** Time and ids are stamped at the edge (DESIGN section 2); tests inject their own. */
export interface Clock {
  now(): Date;
}
export interface IdGenerator {
  /** A fresh ULID (non-monotonic: event ids derive from it, see deriveEventId). */
  next(): string;
}

export const systemClock: Clock = { now: () => new Date() };

export const ulidGenerator: IdGenerator = { next: newUlid };

/** The pure decider's configuration, from the service configuration, validated at start. */
export function deciderConfigFrom(config: ServiceConfig): DeciderConfig {
  let escalationPolicies = DEFAULT_DECIDER_CONFIG.escalationPolicies;
  if (config.escalationPoliciesJson) {
    try {
      escalationPolicies = parseEscalationPolicies(JSON.parse(config.escalationPoliciesJson));
    } catch (err) {
      const why = err instanceof AcpError ? `${err.field ?? ''} ${err.message}` : (err as Error).message;
      throw new ConfigError([`CONCLAVE_ESCALATION_POLICIES: ${why}`]);
    }
  }
  // A response may be dated as far ahead as a signed request may be (the skew of authenticated services).
  const skew = (config as Partial<{ authSkewMs: number }>).authSkewMs;
  return {
    ...DEFAULT_DECIDER_CONFIG,
    expiryGraceMs: config.expiryGraceMs,
    escalationPolicies,
    maxResponseTimestampAheadMs: skew ?? DEFAULT_DECIDER_CONFIG.maxResponseTimestampAheadMs,
  };
}

export const runtimeProviders: Provider[] = [
  { provide: CLOCK, useValue: systemClock },
  { provide: IDS, useValue: ulidGenerator },
  { provide: DECIDER_CONFIG, inject: [SERVICE_CONFIG], useFactory: deciderConfigFrom },
];
