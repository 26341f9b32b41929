import { ulid } from 'ulid';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

const SECRET = 'merger-with-acme-SECRET';
const RISKPUB_TOKEN = 'riskpub-public-token-0123456789abcdefghij';

/**
 * Write paths attacked with CONCLAVE_AUTH_MODE=required, where the request is well signed and
 * its signer authorized for the action, but not for what the action would reveal or reach:
 *
 * - a human resolver whose clearance does not cover a confidential escalation resolves it
 *   (the reply used to carry the payload, and the decision was taken blind);
 * - an agent with no grant on a domain links a proposal of that domain as a child (`depends_on`),
 *   so the parent's resolution would report the child's outcome to it;
 * - an author classifies a proposal above her own clearance (she could not read it back).
 *
 * Each refusal is asserted with its code and field, and the state is checked unchanged.
 * Registry: alice and bob (confidential clearance, grant on risk), mallory (grant on ops only),
 * riskpub (human resolver, public clearance, grant on risk, a token), riskconf (human resolver,
 * confidential clearance, grant on risk), bridger (grants on ops and risk).
 */
describe('security: write paths refuse what the signer may not read (authentication required)', () => {
  const h = new SecureConclaveHarness({ CONCLAVE_HUMAN_TOKENS: JSON.stringify({ [RISKPUB_TOKEN]: 'riskpub' }) });
  const now = () => new Date().toISOString();
  let base: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    const risk = { domain: 'risk', domain_authority: 0.9, trust_score: 0.9 };
    await h.seed([
      { participant_id: 'alice', clearance: 'confidential', grants: [risk] },
      { participant_id: 'bob', clearance: 'confidential', grants: [risk] },
      { participant_id: 'mallory', clearance: 'restricted', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'riskpub', roles: ['human-resolver'], clearance: 'public', grants: [risk] },
      { participant_id: 'riskconf', roles: ['human-resolver'], clearance: 'confidential', grants: [risk] },
      { participant_id: 'bridger', grants: [risk, { domain: 'ops', domain_authority: 0.9, trust_score: 0.9 }] },
    ]);
    const escalation = h.instances.find((i) => i.name === 'escalation')!.app;
    base = (await escalation.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(() => h.stop());

  /** A confidential risk proposal by alice, escalated and in the desk's inbox. */
  async function confidentialEscalation(): Promise<string> {
    const alice = await h.clientFor('alice');
    const p = await alice.propose({
      domain: 'risk.credit',
      author: 'alice',
      payload: { deal: SECRET },
      quorum: 5,
      created_at: now(),
      classification: 'confidential',
    });
    await alice.escalate(p.proposal_id, { reason: 'needs a human', requested_by: 'alice' });
    await eventually(async () => ((await alice.escalations()).some((e) => e.proposal_id === p.proposal_id && e.routed) ? true : undefined));
    return p.proposal_id;
  }

  describe('resolving an escalation needs a clearance that covers it', () => {
    it('given a confidential escalation, when riskpub (human resolver on risk, public clearance) resolves it with a signed acp.v1.resolve, then FORBIDDEN on proposal_id, no payload in the reply, and it is still escalated', async () => {
      const id = await confidentialEscalation();
      const riskpub = await h.clientFor('riskpub');
      const refused = await riskpub.resolve(id, { outcome: 'approved', resolved_by: 'riskpub', note: 'blind approval' }).then(
        () => undefined,
        (e: { code: string; field?: string; message: string }) => e,
      );
      expect(refused).toMatchObject({ code: 'FORBIDDEN', field: 'proposal_id' });
      expect(refused!.message).not.toContain(SECRET);
      expect((await (await h.clientFor('alice')).get(id)).status).toBe('escalated');
    });

    it("given a confidential escalation, when riskpub's bearer token resolves it over HTTP, then 403 FORBIDDEN, no payload in the body, and it is still escalated", async () => {
      const id = await confidentialEscalation();
      const res = await fetch(`${base}/escalations/${id}/resolve`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${RISKPUB_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: 'rejected', note: 'blind rejection' }),
      });
      const text = await res.text();
      expect(res.status).toBe(403);
      expect(JSON.parse(text)).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'proposal_id' } });
      expect(text).not.toContain(SECRET);
      expect((await (await h.clientFor('alice')).get(id)).status).toBe('escalated');
    });

    it('given a confidential escalation, when riskconf (confidential clearance) resolves it, then it is resolved and her reply shows the payload she may read', async () => {
      const id = await confidentialEscalation();
      const resolved = await (
        await h.clientFor('riskconf')
      ).resolve(id, { outcome: 'approved', resolved_by: 'riskconf', note: 'read and approved' });
      expect(resolved).toMatchObject({
        status: 'resolved',
        payload: { deal: SECRET },
        resolution: { outcome: 'approved', trigger: 'manual' },
      });
    });
  });

  describe('classifying a proposal needs a clearance that covers it', () => {
    it('given alice (confidential clearance), when she submits a risk proposal classified restricted, then FORBIDDEN on classification and no proposal is recorded', async () => {
      const alice = await h.clientFor('alice');
      const proposal_id = ulid();
      await expect(
        alice.propose({
          proposal_id,
          domain: 'risk',
          author: 'alice',
          payload: { deal: SECRET },
          quorum: 1,
          created_at: now(),
          classification: 'restricted',
        }),
      ).rejects.toMatchObject({ code: 'FORBIDDEN', field: 'classification' });
      await expect(alice.get(proposal_id)).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
    });
  });

  describe('depends_on reaches only domains the author may read', () => {
    /** An ops proposal by `author` that depends on a fresh risk proposal of alice's (quorum 1). */
    async function opsParent(author: string, proposal_id = ulid()) {
      const child = await (
        await h.clientFor('alice')
      ).propose({ domain: 'risk', author: 'alice', payload: { x: 1 }, quorum: 1, created_at: now() });
      const client = await h.clientFor(author);
      const submitted = client.propose({
        proposal_id,
        domain: 'ops',
        author,
        payload: { p: 1 },
        quorum: 1,
        created_at: now(),
        depends_on: [child.proposal_id],
      });
      return { child: child.proposal_id, proposal_id, client, submitted };
    }

    it("given alice's risk proposal, when mallory (grant on ops only) submits an ops parent that depends on it, then FORBIDDEN on depends_on and no parent exists", async () => {
      const parent = await opsParent('mallory');
      await expect(parent.submitted).rejects.toMatchObject({ code: 'FORBIDDEN', field: 'depends_on' });
      await expect((await h.clientFor('bridger')).get(parent.proposal_id)).rejects.toMatchObject({ code: 'PROPOSAL_NOT_FOUND' });
    });

    it('given a risk proposal, when bridger (grants on ops and risk) submits an ops parent that depends on it, then the parent is resolved with the child once the child is decided', async () => {
      const parent = await opsParent('bridger');
      await parent.submitted;
      await (await h.clientFor('bob')).endorse(parent.child, { participant_id: 'bob', confidence: 0.9 });
      const resolved = await eventually(async () => {
        const p = await parent.client.get(parent.proposal_id);
        return p.status === 'resolved' ? p : undefined;
      });
      expect(resolved.resolution).toMatchObject({ outcome: 'approved', child_outcomes: { [parent.child]: 'approved' } });
    });
  });
});
