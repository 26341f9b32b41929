import type { AuditEntry } from '@conclave/registry-protocol';
import { entryHash } from '@conclave/registry-protocol';
import { sha256Hex } from '@conclave/service-kit';
import { describeVerification, verifyAuditJsonl } from '../../apps/cli/src/commands/audit.command';
import { ConclaveHarness, eventually, Instance } from '../support/conclave-harness';

/**
 * The audit service over real NATS: every event and every refused command becomes an entry of
 * the hash chain (RFC 14.6); the JSONL export verifies; each of the four ways of tampering with
 * one entry is reported at the entry where the chain breaks; a restart continues the chain.
 */
describe('audit log: hash chain of every event and rejection, export, verify', () => {
  const h = new ConclaveHarness();
  let audit: Instance;
  const now = () => new Date().toISOString();

  beforeAll(async () => {
    await h.start('intake', 'resolver');
    audit = await h.add('audit');
  });
  afterAll(() => h.stop());

  async function http<T>(path: string): Promise<T> {
    const url = (await audit.app.getUrl()).replace('[::1]', '127.0.0.1');
    const res = await fetch(`${url}${path}`);
    const text = await res.text();
    return (path.startsWith('/audit/export') ? text : JSON.parse(text)) as T;
  }

  async function exported(minEntries: number): Promise<string> {
    return eventually(
      async () => {
        const text = await http<string>('/audit/export');
        return text.split('\n').filter(Boolean).length >= minEntries ? text : undefined;
      },
      10_000,
      `${minEntries} audit entries`,
    );
  }

  let proposalId: string;

  it('records submissions, responses, resolutions with actor, action, proposal id, timestamp and payload hash, and rejections', async () => {
    const p = await h.client.propose({
      domain: 'risk.credit',
      author: 'agent-author',
      payload: { loan: 42 },
      quorum: 1,
      created_at: now(),
    });
    proposalId = p.proposal_id;
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
    await expect(
      h.client.endorse(p.proposal_id, { participant_id: 'agent-author', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 }),
    ).rejects.toMatchObject({ code: 'SELF_RESPONSE' });
    const { entries } = await eventually(
      async () => {
        const r = await http<{ entries: AuditEntry[] }>(`/audit/entries?proposal_id=${p.proposal_id}`);
        return r.entries.length >= 4 && r.entries.some((e) => e.action === 'ProposalResolved') ? r : undefined;
      },
      10_000,
      'entries of the proposal, its resolution included',
    );
    expect(entries.map((e) => e.action)).toEqual(
      expect.arrayContaining(['ProposalSubmitted', 'ResponseRecorded', 'ProposalResolved', 'rejected:respond']),
    );
    expect(p.payload_hash).toMatch(/^[0-9a-f]{64}$/);
    const submitted = entries.find((e) => e.action === 'ProposalSubmitted')!;
    expect(submitted).toMatchObject({
      actor: 'agent-author',
      outcome: 'recorded',
      proposal_id: p.proposal_id,
      payload_hash: p.payload_hash,
      timestamp: expect.any(String),
    });
    expect(entries.find((e) => e.action === 'ResponseRecorded')).toMatchObject({
      actor: 'agent-a',
      outcome: 'recorded',
      proposal_id: p.proposal_id,
      payload_hash: p.payload_hash,
      timestamp: expect.any(String),
    });
    // The resolution is the resolver's act, at the instant it decided; it carries the submission's payload hash.
    const resolved = await h.client.get(p.proposal_id);
    expect(resolved.resolution).toMatchObject({ outcome: 'approved', trigger: 'quorum', decided_at: expect.any(String) });
    expect(entries.find((e) => e.action === 'ProposalResolved')).toMatchObject({
      actor: 'conclave-resolver',
      outcome: 'recorded',
      proposal_id: p.proposal_id,
      timestamp: resolved.resolution?.decided_at,
      payload_hash: p.payload_hash,
    });
    expect(entries.find((e) => e.action === 'rejected:respond')).toMatchObject({
      actor: 'agent-author',
      outcome: 'rejected',
      error: { code: 'SELF_RESPONSE' },
    });
  });

  it('the JSONL export verifies and ends at the head the service reports', async () => {
    const text = await exported(4);
    const head = await http<{ seq: number; hash: string }>('/audit/head');
    const result = verifyAuditJsonl(text, head.hash);
    expect(result).toEqual({ ok: true, entries: head.seq, head: head.hash });
    expect(describeVerification(result)).toMatch(/^OK/);
  });

  describe('tampering with one entry is detected at the entry where the chain breaks', () => {
    let lines: string[];
    beforeAll(async () => {
      lines = (await exported(4)).split('\n').filter(Boolean);
    });
    const k = 2; // the third entry (seq 3, line 3)

    it('modification', () => {
      const e = JSON.parse(lines[k]) as AuditEntry;
      const tampered = [...lines];
      tampered[k] = JSON.stringify({ ...e, actor: 'someone-else' });
      expect(verifyAuditJsonl(tampered.join('\n'))).toMatchObject({ ok: false, index: k, seq: k + 1, problem: 'modified' });
      expect(describeVerification(verifyAuditJsonl(tampered.join('\n')))).toMatch(/line 3 \(seq 3\): modified/);
    });

    it('modification with the hash recomputed breaks the link to the next entry', () => {
      const e = JSON.parse(lines[k]) as AuditEntry;
      const forged = { ...e, actor: 'someone-else' };
      const tampered = [...lines];
      tampered[k] = JSON.stringify({ ...forged, hash: entryHash(forged, sha256Hex) });
      expect(verifyAuditJsonl(tampered.join('\n'))).toMatchObject({ ok: false, index: k + 1, problem: 'broken-link' });
    });

    it('deletion', () => {
      const tampered = lines.filter((_, i) => i !== k);
      expect(verifyAuditJsonl(tampered.join('\n'))).toMatchObject({ ok: false, index: k, seq: k + 2, problem: 'broken-link' });
    });

    it('deletion of the last entry, caught against the head', async () => {
      const head = await http<{ hash: string }>('/audit/head');
      const all = (await http<string>('/audit/export')).split('\n').filter(Boolean);
      expect(verifyAuditJsonl(all.slice(0, -1).join('\n'), head.hash)).toMatchObject({ ok: false, problem: 'head-mismatch' });
    });

    it('insertion', () => {
      const e = JSON.parse(lines[k]) as AuditEntry;
      const tampered = [...lines.slice(0, k), JSON.stringify({ ...e, action: 'ForgedEvent' }), ...lines.slice(k)];
      expect(verifyAuditJsonl(tampered.join('\n'))).toMatchObject({ ok: false, index: k, problem: 'modified' });
    });

    it('reordering', () => {
      const tampered = [...lines];
      [tampered[k], tampered[k + 1]] = [tampered[k + 1], tampered[k]];
      expect(verifyAuditJsonl(tampered.join('\n'))).toMatchObject({ ok: false, index: k, problem: 'broken-link' });
    });
  });

  it('after a restart the chain continues from its last entry: no gap, no duplicate, still verifies', async () => {
    const before = await http<{ seq: number }>('/audit/head');
    await h.kill(audit);
    const p = await h.client.propose({ domain: 'ops', author: 'agent-ops', payload: { restart: true }, quorum: 2, created_at: now() });
    audit = await h.add('audit');
    const text = await eventually(
      async () => {
        const t = await http<string>('/audit/export');
        return t.includes(p.proposal_id) ? t : undefined;
      },
      10_000,
      'the entry written while the audit service was down',
    );
    const entries = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEntry);
    expect(entries.length).toBeGreaterThan(before.seq);
    expect(new Set(entries.map((e) => e.source_id)).size).toBe(entries.length);
    expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
    expect(verifyAuditJsonl(text).ok).toBe(true);
    expect(entries.filter((e) => e.proposal_id === proposalId).length).toBeGreaterThanOrEqual(4);
  });
});
