import { createHash } from 'node:crypto';
import { AuditEntry, chainEntry } from '@conclave/registry-protocol';
import { describeVerification, duplicateKey, verifyAuditJsonl } from './audit.command';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function chain(n: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (let i = 0; i < n; i++) {
    entries.push(
      chainEntry(
        entries[i - 1],
        {
          actor: 'alice',
          action: 'ProposalSubmitted',
          outcome: 'recorded',
          proposal_id: null,
          timestamp: '2026-01-01T00:00:00.000Z',
          payload_hash: null,
          stream: 's',
          source_id: `e${i}`,
        },
        sha256,
      ),
    );
  }
  return entries;
}

describe('conclave audit verify without --head', () => {
  it('given an intact export, then it is OK', () => {
    expect(
      verifyAuditJsonl(
        chain(3)
          .map((e) => JSON.stringify(e))
          .join('\n') + '\n',
      ),
    ).toMatchObject({ ok: true, entries: 3 });
  });

  it('given an empty file or one of blank lines, then it is refused with a clear message', () => {
    for (const text of ['', '\n\n  \n']) {
      const result = verifyAuditJsonl(text);
      expect(result).toMatchObject({ ok: false, problem: 'malformed' });
      expect(describeVerification(result)).toMatch(/no entries/);
    }
  });

  it('given a line whose key appears twice (the first value shown to readers, the last hashed), then it is refused naming the key and line', () => {
    const lines = chain(3).map((e) => JSON.stringify(e));
    // The entry still hashes correctly: JSON.parse keeps the last "actor".
    lines[1] = lines[1].replace('{', '{"actor":"mallory",');
    const result = verifyAuditJsonl(lines.join('\n'));
    expect(result).toMatchObject({ ok: false, index: 1, problem: 'malformed' });
    expect(describeVerification(result)).toMatch(/line 2 has the key "actor" twice/);
  });

  it('finds duplicates written with escapes and in nested objects, and not across sibling objects or inside strings', () => {
    expect(duplicateKey('{"a":1,"\\u0061":2}')).toBe('a');
    expect(duplicateKey('{"error":{"code":"X","code":"Y"}}')).toBe('code');
    expect(duplicateKey('{"a":{"b":1},"c":{"b":2},"d":[{"b":1},{"b":2}]}')).toBeUndefined();
    expect(duplicateKey('{"a":"\\",\\"a\\":","b":"{\\"a\\""}')).toBeUndefined();
  });
});
