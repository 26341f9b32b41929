import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { AuditEntry, AuditEntryContent, GENESIS_HASH, chainEntry, entryHash, verifyChain } from './audit-chain';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const content: fc.Arbitrary<AuditEntryContent> = fc.record({
  actor: fc.string({ minLength: 1, maxLength: 12 }),
  action: fc.constantFrom('ProposalSubmitted', 'ResponseRecorded', 'ProposalResolved', 'rejected:respond'),
  outcome: fc.constantFrom('recorded' as const, 'rejected' as const),
  proposal_id: fc.option(fc.string({ minLength: 26, maxLength: 26 }), { nil: null }),
  timestamp: fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
  payload_hash: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }), { nil: null }),
  stream: fc.string({ minLength: 1, maxLength: 20 }),
  source_id: fc.string({ minLength: 1, maxLength: 26 }),
});

function build(contents: AuditEntryContent[]): AuditEntry[] {
  const out: AuditEntry[] = [];
  for (const c of contents) out.push(chainEntry(out[out.length - 1], c, sha256));
  return out;
}

const chainAndIndex = fc
  .array(content, { minLength: 2, maxLength: 25 })
  .chain((cs) => fc.tuple(fc.constant(build(cs)), fc.nat({ max: cs.length - 1 })));

describe('audit hash chain (14.6)', () => {
  it('an untouched chain verifies, and its head is the last hash', () => {
    fc.assert(
      fc.property(fc.array(content, { maxLength: 25 }), (cs) => {
        const chain = build(cs);
        expect(verifyChain(chain, sha256)).toEqual({
          ok: true,
          entries: chain.length,
          head: chain.length ? chain[chain.length - 1].hash : GENESIS_HASH,
        });
      }),
    );
  });

  it('modification: changing any field of one entry is reported at that entry', () => {
    fc.assert(
      fc.property(
        chainAndIndex,
        fc.constantFrom('actor', 'action', 'timestamp', 'payload_hash', 'proposal_id', 'stream'),
        ([chain, i], field) => {
          const tampered = chain.map((e) => ({ ...e }));
          (tampered[i] as unknown as Record<string, unknown>)[field] = `${String(tampered[i][field as keyof AuditEntry])}x`;
          expect(verifyChain(tampered, sha256)).toMatchObject({ ok: false, index: i, seq: i + 1, problem: 'modified' });
        },
      ),
    );
  });

  it('modification with a recomputed hash is reported at the next entry (or by the head anchor at the end)', () => {
    fc.assert(
      fc.property(chainAndIndex, ([chain, i]) => {
        const tampered = chain.map((e) => ({ ...e }));
        const forged = { ...tampered[i], actor: 'mallory' };
        tampered[i] = { ...forged, hash: entryHash(forged, sha256) };
        const expectedHead = chain[chain.length - 1].hash;
        if (i < chain.length - 1) {
          expect(verifyChain(tampered, sha256)).toMatchObject({ ok: false, index: i + 1, problem: 'broken-link' });
        } else {
          expect(verifyChain(tampered, sha256, { expectedHead })).toMatchObject({ ok: false, problem: 'head-mismatch' });
        }
      }),
    );
  });

  it('deletion of one entry is reported where it was (a cut tail by the head anchor)', () => {
    fc.assert(
      fc.property(chainAndIndex, ([chain, i]) => {
        const tampered = chain.filter((_, k) => k !== i);
        if (i < chain.length - 1) {
          expect(verifyChain(tampered, sha256)).toMatchObject({ ok: false, index: i, seq: i + 2 });
        } else {
          expect(verifyChain(tampered, sha256).ok).toBe(true);
          expect(verifyChain(tampered, sha256, { expectedHead: chain[chain.length - 1].hash })).toMatchObject({
            ok: false,
            problem: 'head-mismatch',
          });
        }
      }),
    );
  });

  it('insertion of a forged entry (even well hashed and linked) is reported at or right after it', () => {
    fc.assert(
      fc.property(chainAndIndex, content, ([chain, i], extra) => {
        const previous = i === 0 ? undefined : chain[i - 1];
        const forged = chainEntry(previous, extra, sha256);
        const tampered = [...chain.slice(0, i), forged, ...chain.slice(i)];
        const r = verifyChain(tampered, sha256);
        expect(r).toMatchObject({ ok: false, index: i + 1, problem: 'broken-link' });
        // A naive insertion (hash not recomputed) is caught at the entry itself.
        const naive = [...chain.slice(0, i), { ...chain[i], actor: 'mallory' }, ...chain.slice(i)];
        expect(verifyChain(naive, sha256)).toMatchObject({ ok: false, index: i, problem: 'modified' });
      }),
    );
  });

  it('reordering: swapping two entries is reported at the first of them', () => {
    fc.assert(
      fc.property(
        chainAndIndex.chain(([chain, i]) =>
          fc.tuple(
            fc.constant(chain),
            fc.constant(i),
            fc.nat({ max: chain.length - 1 }).filter((j) => j !== i),
          ),
        ),
        ([chain, i, j]) => {
          const tampered = [...chain];
          [tampered[i], tampered[j]] = [tampered[j], tampered[i]];
          expect(verifyChain(tampered, sha256)).toMatchObject({ ok: false, index: Math.min(i, j) });
        },
      ),
    );
  });

  it('anything that is not an entry is malformed, named by index', () => {
    const chain = build([
      {
        actor: 'a',
        action: 'x',
        outcome: 'recorded',
        proposal_id: null,
        timestamp: '2026-01-01T00:00:00Z',
        payload_hash: null,
        stream: 's',
        source_id: '1',
      },
    ]);
    expect(verifyChain([...chain, { hello: 1 }], sha256)).toMatchObject({ ok: false, index: 1, problem: 'malformed' });
  });
});
