import { AcpError, AcpErrorCode } from '@conclave/acp-protocol';
import type { CommandContext } from '@conclave/service-kit';
import type { EscalationConfig } from './escalation.config';
import { HumanResolverTokens } from './human-resolver-tokens';

const context = { newId: () => '01ARZ3NDEKTSV4RRFFQ69G5FAV', now: () => '2025-01-15T10:00:00.000Z', metadata: (a: string) => ({ command_id: 'x', now: 'y', actor: a }) } as unknown as CommandContext;
const tokens = (authMode: 'required' | 'off') =>
  new HumanResolverTokens({ routes: [], humanTokens: new Map([['token-of-alice', 'human:alice']]) }, { authMode } as EscalationConfig, context);

function code(fn: () => unknown): AcpErrorCode | undefined {
  try {
    fn();
  } catch (e) {
    return (e as AcpError).code;
  }
  return undefined;
}

describe('human resolver tokens (issue 5 item 8, until the participant registry)', () => {
  it('given auth required, when the token is valid, then its human; resolved_by may repeat it, never differ', () => {
    const t = tokens('required');
    expect(t.authenticate('Bearer token-of-alice', undefined)).toBe('human:alice');
    expect(t.authenticate('bearer token-of-alice', 'human:alice')).toBe('human:alice');
    expect(code(() => t.authenticate('Bearer token-of-alice', 'human:bob'))).toBe('FORBIDDEN');
    expect(t.metadata('human:alice')).toEqual({ command_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', now: '2025-01-15T10:00:00.000Z', actor: 'human:alice' });
  });

  it('given auth required, when the token is missing, malformed or unknown, then UNAUTHENTICATED', () => {
    const t = tokens('required');
    expect(code(() => t.authenticate(undefined, 'human:alice'))).toBe('UNAUTHENTICATED');
    expect(code(() => t.authenticate('Basic token-of-alice', 'human:alice'))).toBe('UNAUTHENTICATED');
    expect(code(() => t.authenticate('Bearer token-of-mallory', undefined))).toBe('UNAUTHENTICATED');
  });

  it('given auth off, then the declared human is taken, and a presented token is still checked', () => {
    const t = tokens('off');
    expect(t.authenticate(undefined, 'human:bob')).toBe('human:bob');
    expect(code(() => t.authenticate(undefined, undefined))).toBe('SCHEMA_VIOLATION');
    expect(code(() => t.authenticate('Bearer wrong-token', undefined))).toBe('UNAUTHENTICATED');
    expect(t.metadata('human:bob').actor).toBe('human:bob');
  });
});
