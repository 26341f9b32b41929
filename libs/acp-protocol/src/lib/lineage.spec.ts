/** 11.3 causal lineage and 9.3 parent/child links, checked at submission on what the edge found. */
import { P1, P2, P3, min } from '../testing/fixtures';
import { AcpError } from './errors';
import { EntryLinks, checkCauses, checkChildren, childrenToLoad } from './lineage';

const entry = (depends_on: string[] = [], caused_by: string[] = []): EntryLinks => ({ depends_on, caused_by });
const P4 = P1.slice(0, 25) + 'Z';

function codeOf(fn: () => void): { code: string; field?: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof AcpError) return { code: e.code, field: e.field };
    throw e;
  }
  throw new Error('did not throw');
}

describe('11.3 caused_by', () => {
  it('given causes that exist, then the entry may name them', () => {
    expect(() =>
      checkCauses(
        P1,
        [P2, P3],
        new Map([
          [P2, entry()],
          [P3, entry()],
        ]),
      ),
    ).not.toThrow();
  });

  it('given a cause that does not exist, then PROPOSAL_NOT_FOUND naming its position', () => {
    expect(
      codeOf(() =>
        checkCauses(
          P1,
          [P2, P3],
          new Map([
            [P2, entry()],
            [P3, null],
          ]),
        ),
      ),
    ).toEqual({ code: 'PROPOSAL_NOT_FOUND', field: 'caused_by.1' });
  });

  it('given the entry itself as a cause, then SCHEMA_VIOLATION', () => {
    expect(codeOf(() => checkCauses(P1, [P1], new Map()))).toEqual({ code: 'SCHEMA_VIOLATION', field: 'caused_by.0' });
  });
});

describe('9.3 depends_on', () => {
  it('given children that exist, then the parent may be submitted without expires_at', () => {
    expect(() =>
      checkChildren(
        P1,
        [P2, P3],
        null,
        new Map([
          [P2, entry()],
          [P3, entry()],
        ]),
      ),
    ).not.toThrow();
  });

  it('given a child that does not exist and no expires_at, then PROPOSAL_NOT_FOUND: the parent would stay pending forever', () => {
    expect(
      codeOf(() =>
        checkChildren(
          P1,
          [P2, P3],
          null,
          new Map([
            [P2, entry()],
            [P3, null],
          ]),
        ),
      ),
    ).toEqual({ code: 'PROPOSAL_NOT_FOUND', field: 'depends_on.1' });
  });

  it('given a child that does not exist yet and an expires_at, then the parent is accepted (the deadline ends the wait)', () => {
    expect(() => checkChildren(P1, [P2], min(5), new Map([[P2, null]]))).not.toThrow();
  });

  it('given the parent among its own children, then SCHEMA_VIOLATION', () => {
    expect(codeOf(() => checkChildren(P1, [P1], min(5), new Map([[P1, null]])))).toEqual({
      code: 'SCHEMA_VIOLATION',
      field: 'depends_on.0',
    });
  });

  it('given a child that (through its own children) depends on the parent, then SCHEMA_VIOLATION naming the cycle', () => {
    // P3 was submitted first, with an expires_at, naming P1 as a child that did not exist yet.
    const known = new Map([
      [P2, entry([P3])],
      [P3, entry([P1])],
      [P1, null],
    ]);
    let message = '';
    try {
      checkChildren(P1, [P2], null, known);
    } catch (e) {
      message = (e as AcpError).message;
      expect((e as AcpError).code).toBe('SCHEMA_VIOLATION');
      expect((e as AcpError).field).toBe('depends_on');
    }
    expect(message).toContain(`${P1} -> ${P2} -> ${P3} -> ${P1}`);
  });

  it('given a diamond (two children sharing a grandchild), then it is no cycle', () => {
    const known = new Map([
      [P2, entry([P4])],
      [P3, entry([P4])],
      [P4, entry()],
    ]);
    expect(() => checkChildren(P1, [P2, P3], null, known)).not.toThrow();
  });

  it('childrenToLoad names the children and, transitively, theirs, that are not known yet, once each', () => {
    expect(childrenToLoad([P2, P3], new Map())).toEqual([P2, P3]);
    expect(
      childrenToLoad(
        [P2, P3],
        new Map([
          [P2, entry([P4])],
          [P3, entry([P4])],
        ]),
      ),
    ).toEqual([P4]);
    expect(
      childrenToLoad(
        [P2],
        new Map([
          [P2, entry([P3])],
          [P3, entry([P2])],
        ]),
      ),
    ).toEqual([]);
  });
});
