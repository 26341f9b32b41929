import { AcpError } from '@conclave/acp-protocol';
import { parseQuery } from './audit.controller';

/**
 * Audit queries come from NATS bodies and HTTP query strings (which Express parses into nested
 * objects): every shape that is not a query is a SCHEMA_VIOLATION, never a TypeError (INTERNAL).
 */
describe('audit parseQuery: queries that are not queries', () => {
  const refusal = (input: unknown) => {
    try {
      parseQuery(input);
      return undefined;
    } catch (e) {
      return e instanceof AcpError ? { code: e.code, field: e.field } : e;
    }
  };

  it('given an array instead of an object, then SCHEMA_VIOLATION', () => {
    expect(refusal([[1]])).toEqual({ code: 'SCHEMA_VIOLATION', field: undefined });
  });

  it.each([
    ['limit', { toString: 'x' }],
    ['after_seq', { valueOf: 'x' }],
    ['limit', [3]],
    ['limit', ''],
    ['after_seq', -1],
  ])('given %s = %j, then SCHEMA_VIOLATION on that field', (field, value) => {
    expect(refusal({ [field]: value })).toEqual({ code: 'SCHEMA_VIOLATION', field });
  });

  it('given numbers as numbers or as query strings, then the query', () => {
    expect(parseQuery({ limit: 5, after_seq: '7', actor: 'alice' })).toEqual({ limit: 5, after_seq: 7, actor: 'alice' });
  });
});
