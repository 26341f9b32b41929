import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { generateParticipantKeys, type ParticipantKeyPair } from '@conclave/sdk';
import { demoParticipants, runSecureDemo, SecureDemoResult, setupSecureDemo } from '../../apps/cli/src/commands/secure-demo.command';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { parseExposition, sumOf } from '../support/metrics-text';

/**
 * What `npm run up` shows with authentication on (its default): the demo's participants
 * registered through the signed registry API, Appendix C and the council decided with every
 * request signed by the participant it acts for, and two attacks refused with their codes.
 */
describe('the demo of `npm run up` with authentication required', () => {
  const h = new SecureConclaveHarness();
  const keysDir = mkdtempSync(join(tmpdir(), 'conclave-demo-keys-'));
  let keys: Map<string, ParticipantKeyPair>;
  let first: SecureDemoResult;
  const lines: string[] = [];
  const demo = (print: (line: string) => void) =>
    runSecureDemo(h.nc, keys, print, { prefix: h.prefix, streamSuffix: h.run, councilPrefix: `c${h.prefix}`, timeoutMs: 30_000 });
  const summary = (r: SecureDemoResult) =>
    r.decisions.map((d) => `${d.domain} ${d.outcome} ${d.trigger}${d.resolved_by ? ` ${d.resolved_by}` : ''}`).sort();

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper', 'escalation', 'council');
  });
  afterAll(async () => {
    rmSync(keysDir, { recursive: true, force: true });
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  it('given an empty registry, when the setup runs, then every demo participant is registered with its key file (mode 600) and the grants of Appendix C', async () => {
    keys = await setupSecureDemo(h.admin, 'admin', { keysDir, print: (l) => lines.push(l) });
    for (const p of demoParticipants()) {
      const file = join(keysDir, `${p.participant_id}.pem`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toBe(keys.get(p.participant_id)!.privateKeyPem);
    }
    const get = (id: string) =>
      h.admin.call<{ participant: { roles: string[]; grants: Record<string, unknown> } }>(REGISTRY_PATTERNS.get, { participant_id: id });
    expect((await get('agent-a')).participant.grants).toMatchObject({
      'risk.credit': { domain_authority: 0.9, trust_score: 0.9, actions: ['respond'] },
      'finance.budget': { domain_authority: 0.8, trust_score: 0.9, actions: ['respond'] },
      'strategy.pricing': { domain_authority: 0.9, trust_score: 0.9, actions: ['respond'] },
    });
    expect((await get('junior-agent')).participant.grants).toEqual({
      'ops.deploy': expect.objectContaining({ domain_authority: 0.4, trust_score: 0.7 }),
    });
    const human = (await get('human-pricing-lead')).participant;
    expect(human.roles).toEqual(['human-resolver']);
    expect(human.grants).toEqual({ 'strategy.pricing': expect.objectContaining({ actions: ['resolve'] }) });
    expect(lines.join('\n')).toContain(`registered ${demoParticipants().length} demo participants`);
  });

  it('given the registered participants, when the demo runs signed, then the four scenarios and the council decide as with authentication off', async () => {
    first = await demo((l) => lines.push(l));
    expect(summary(first)).toEqual([
      'finance.budget approved timeout',
      'ops.deploy rejected quorum',
      'risk.credit approved quorum',
      'strategy.pricing approved manual human-pricing-lead',
      'strategy.pricing escalated quorum',
    ]);
    // The factors were stamped from the grants: Appendix C's sums.
    expect(first.decisions.find((d) => d.domain === 'risk.credit')).toMatchObject({ votes_for: 1.1645, votes_against: 0 });
    expect(first.decisions.find((d) => d.domain === 'ops.deploy')).toMatchObject({ votes_for: 0.168, votes_against: 0.81225 });
    expect(first.council.terminal_state).toMatch(/^decided/);
    expect(lines.join('\n')).toContain('skeptic: dual writes may still drift');
  });

  it('given the demo, when the attacker sends an unsigned proposal and votes outside its grant, then both are refused with their codes and nothing is recorded', async () => {
    expect(first.refusals).toEqual([
      expect.objectContaining({ code: 'UNAUTHENTICATED', recorded: false }),
      expect.objectContaining({ code: 'FORBIDDEN', field: 'domain', recorded: false }),
    ]);
    expect(lines.filter((l) => l.startsWith('  -> refused'))).toEqual([
      expect.stringMatching(/^ {2}-> refused UNAUTHENTICATED: .*nothing recorded \(no proposal /),
      expect.stringMatching(/^ {2}-> refused FORBIDDEN \(field domain\): .*nothing recorded \(C\.1 has 2 responses, as before\)/),
    ]);
    // Only the demo's own proposals exist, and C.1 holds its two votes.
    const proposer = await h.clientFor('demo-proposer', keys.get('demo-proposer')!.privateKeyPem);
    const { proposals } = await proposer.list({ limit: 100 });
    expect(proposals.map((p) => p.proposal_id).sort()).toEqual([...new Set(first.decisions.map((d) => d.proposal_id))].sort());
    const c1 = await proposer.get(first.decisions.find((d) => d.domain === 'risk.credit')!.proposal_id);
    expect(c1.responses.map((r) => r.participant_id)).toEqual(['agent-a', 'agent-b']);
    // The refusals are counted where /metrics shows them.
    const intake = h.instances.find((i) => i.name === 'intake')!;
    const samples = parseExposition(await (await fetch(`${await intake.app.getUrl()}/metrics`)).text());
    expect(sumOf(samples, 'conclave_auth_refusals_total', { code: 'UNAUTHENTICATED' })).toBeGreaterThanOrEqual(1);
    expect(sumOf(samples, 'conclave_auth_refusals_total', { code: 'FORBIDDEN', reason: 'domain' })).toBeGreaterThanOrEqual(1);
  });

  it('given a registry that has the demo participants and an administrator of an earlier run, when the setup runs again, then it replaces their keys, retires that administrator, and the demo decides again', async () => {
    const earlier = generateParticipantKeys();
    await h.admin.call(REGISTRY_PATTERNS.register, {
      participant_id: 'up-admin-earlier',
      roles: ['administrator'],
      public_key: earlier.publicKey,
    });
    const oldKeyOfA = keys.get('agent-a')!.privateKeyPem;
    const again: string[] = [];
    keys = await setupSecureDemo(h.admin, 'admin', { keysDir, supersedePrefix: 'up-admin-', print: (l) => again.push(l) });
    expect(again).toEqual([
      `registered 0 demo participants, gave ${demoParticipants().length} already registered a new key (private keys in ${keysDir})`,
      'deactivated up-admin-earlier, the administrator of an earlier run',
    ]);
    const stale = await h.clientFor('agent-a', oldKeyOfA);
    await expect(stale.get(first.decisions[0].proposal_id)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    const retired = await h.clientFor('up-admin-earlier', earlier.privateKeyPem);
    await expect(retired.call(REGISTRY_PATTERNS.list)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });

    const second = await demo(() => undefined);
    expect(summary(second)).toEqual(summary(first));
    expect(second.refusals.map((r) => r.code)).toEqual(['UNAUTHENTICATED', 'FORBIDDEN']);
  });
});
