import { ConfigError, loadConfig } from '@conclave/service-kit';
import { EscalationConfig, escalationSettingsFrom } from './escalation.config';

const settings = (env: Record<string, string>) => escalationSettingsFrom(loadConfig(EscalationConfig, env));

describe('escalation configuration is validated at start', () => {
  it('given routes and tokens, then they are parsed', () => {
    const s = settings({
      CONCLAVE_ESCALATION_ROUTES: JSON.stringify([{ id: 'r', domain_prefix: 'risk', assignees: ['human:risk'] }]),
      CONCLAVE_HUMAN_TOKENS: JSON.stringify({ 'secret-token-1-0123456789abcdefghij': 'human:alice' }),
    });
    expect(s.routes).toEqual([{ id: 'r', domain_prefix: 'risk', assignees: ['human:risk'], ladder: [] }]);
    expect(s.humanTokens.get('secret-token-1-0123456789abcdefghij')).toBe('human:alice');
  });

  it('given nothing, then no routes and no tokens; HTTP on 8084, loopback only; the auth skew setting is read', () => {
    expect(settings({})).toEqual({ routes: [], humanTokens: new Map() });
    expect(loadConfig(EscalationConfig, {}).httpPort).toBe(8084);
    expect(loadConfig(EscalationConfig, {}).httpHost).toBe('127.0.0.1');
    expect(loadConfig(EscalationConfig, { CONCLAVE_AUTH_SKEW_MS: '5000' }).authSkewMs).toBe(5000);
  });

  it('given tokens that are not JSON, then the problem does not quote them', () => {
    const secret = '{"a-secret-token-0123456789abcdefghij": human}';
    let error: unknown;
    try {
      settings({ CONCLAVE_HUMAN_TOKENS: secret });
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).problems.join('\n')).toMatch(/CONCLAVE_HUMAN_TOKENS: not valid JSON/);
    expect((error as ConfigError).message).not.toMatch(/a-secret-token|human}/);
  });

  it('given bad values, then one ConfigError naming each variable', () => {
    let error: unknown;
    try {
      settings({
        CONCLAVE_ESCALATION_ROUTES: '[{"id":"r","ladder":[{"action":"nap","after_ms":1}]}]',
        CONCLAVE_HUMAN_TOKENS: '{"short":"human:x"}',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    expect(problems).toMatch(/CONCLAVE_ESCALATION_ROUTES: escalation_routes\.0\.ladder\.0\.action/);
    expect(problems).toMatch(/CONCLAVE_HUMAN_TOKENS: a token must have at least 32 characters/);
  });
});
