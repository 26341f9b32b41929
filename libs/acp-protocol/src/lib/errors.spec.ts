import { AcpError, isAcpErrorCode } from './errors';

describe('AcpError (DESIGN section 5 error replies)', () => {
  it('serialises to the wire error body, with the field only when one is named', () => {
    expect(new AcpError('INVALID_ID', 'bad id', 'proposal_id').toJSON()).toEqual({
      code: 'INVALID_ID',
      message: 'bad id',
      field: 'proposal_id',
    });
    expect(new AcpError('INTERNAL', 'boom').toJSON()).toEqual({ code: 'INTERNAL', message: 'boom' });
  });

  it('knows the closed set of codes', () => {
    expect(isAcpErrorCode('CONFLICT')).toBe(true);
    expect(isAcpErrorCode('conflict')).toBe(false);
  });
});
