import { authorize, clears, grantFor } from './authorization';
import type { ParticipantState } from './participant.state';

const participant = (grants: Record<string, { actions?: string[]; domain_authority?: number }>, roles = ['agent']): ParticipantState => ({
  status: 'active',
  participant: {
    participant_id: 'p',
    display_name: null,
    roles: roles as never,
    clearance: 'internal',
    keys: [],
    registered_at: '2026-01-01T00:00:00Z',
    grants: Object.fromEntries(
      Object.entries(grants).map(([domain, g]) => [
        domain,
        {
          domain,
          actions: (g.actions ?? ['propose', 'respond', 'escalate', 'resolve']) as never,
          domain_authority: g.domain_authority ?? 0.5,
          trust_score: 0.5,
          granted_at: '',
          granted_by: 'admin',
        },
      ]),
    ),
  },
});

describe('14.2 domain-scoped authorization', () => {
  it('a grant on risk covers risk and its subtree (risk.credit, risk.credit.retail), never riskx nor ops', () => {
    const s = participant({ risk: {} });
    expect(authorize(s, 'respond', 'risk').domain).toBe('risk');
    expect(authorize(s, 'respond', 'risk.credit').domain).toBe('risk');
    expect(authorize(s, 'respond', 'risk.credit.retail').domain).toBe('risk');
    expect(() => authorize(s, 'respond', 'riskx')).toThrow(expect.objectContaining({ code: 'FORBIDDEN', field: 'domain' }));
    expect(() => authorize(s, 'respond', 'ops')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });

  it('a grant on risk.credit does not reach up to risk: cross-domain access needs an explicit grant', () => {
    const s = participant({ 'risk.credit': {} });
    expect(() => authorize(s, 'propose', 'risk')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => authorize(s, 'propose', 'risk.market')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });

  it('the most specific grant decides alone: actions and factors', () => {
    const s = participant({ risk: { domain_authority: 0.9 }, 'risk.credit': { actions: ['respond'], domain_authority: 0.3 } });
    expect(s.status === 'active' && grantFor(s.participant, 'risk.credit.retail')?.domain_authority).toBe(0.3);
    expect(s.status === 'active' && grantFor(s.participant, 'risk.market')?.domain_authority).toBe(0.9);
    expect(() => authorize(s, 'propose', 'risk.credit')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(authorize(s, 'propose', 'risk.market').domain).toBe('risk');
  });

  it('human resolution needs the human-resolver role on top of the grant', () => {
    expect(() => authorize(participant({ risk: {} }), 'resolve', 'risk')).toThrow(
      expect.objectContaining({ code: 'FORBIDDEN', field: 'resolved_by' }),
    );
    expect(authorize(participant({ risk: {} }, ['human-resolver']), 'resolve', 'risk').domain).toBe('risk');
  });

  it('unregistered and deactivated participants are refused', () => {
    expect(() => authorize({ status: 'unregistered' }, 'propose', 'risk')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });

  it('14.5 a clearance reads its level and below', () => {
    expect(clears('internal', 'public')).toBe(true);
    expect(clears('internal', 'internal')).toBe(true);
    expect(clears('internal', 'confidential')).toBe(false);
    expect(clears('restricted', 'confidential')).toBe(true);
  });
});
