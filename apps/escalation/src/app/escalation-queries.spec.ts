import { AcpError } from '@conclave/acp-protocol';
import type { Identity, ProposalReadPolicy, ProposalStore } from '@conclave/service-kit';
import type { EscalationInbox } from './escalation-inbox';
import { EscalationQueries } from './escalation-queries';

/**
 * The inbox list's paging fields come from NATS bodies and HTTP query strings, so they may be
 * any JSON value or a nested query object. The fuzzer found `limit: {"toString": "x"}` answered
 * INTERNAL: coercing it with Number() throws a TypeError.
 */
describe('EscalationQueries.list: limit and cursor that are not numbers', () => {
  const inbox = { list: () => [] } as unknown as EscalationInbox;
  const queries = new EscalationQueries(inbox, {} as ProposalStore, { mayReadDomain: () => true } as unknown as ProposalReadPolicy);
  const reader = { participant_id: 'reader' } as unknown as Identity;
  const refusal = (query: Record<string, unknown>) => {
    try {
      queries.list(query, reader);
      return undefined;
    } catch (e) {
      return e instanceof AcpError ? { code: e.code, field: e.field } : e;
    }
  };

  it.each([
    ['limit', { toString: 'x' }],
    ['limit', { valueOf: 1 }],
    ['limit', [7]],
    ['limit', true],
    ['limit', ''],
    ['cursor', { toString: 'x' }],
    ['cursor', null],
  ])('given %s = %j, when listed, then SCHEMA_VIOLATION on that field', (field, value) => {
    expect(refusal({ [field]: value })).toEqual({ code: 'SCHEMA_VIOLATION', field });
  });

  it('given numbers as numbers or as query strings, when listed, then a page', () => {
    expect(queries.list({ limit: 5, cursor: '0' }, reader).page).toEqual({ escalations: [], next_cursor: null });
    expect(queries.list({ limit: '5' }, reader).page).toEqual({ escalations: [], next_cursor: null });
  });
});
