import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDomainPolicy } from '@conclave/acp-protocol';
import { formatReplay, readPolicyFile, replayDomain, ReplayReport } from '../../apps/cli/src/commands/policies.command';
import { ConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';
import { runConclave } from '../support/cli';

/**
 * `conclave replay --policy <file> --domain <d> --since <time>`: past proposals of Appendix C,
 * decided for real by the services, re-decided under a proposed document; the report counts the
 * outcomes that would change, with examples, and the event log holds exactly what it held before.
 */
describe('what-if replay of a domain under a proposed policy (conclave replay)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;
  let since: Date;
  const ids: Record<string, string> = {};
  const dir = mkdtempSync(join(tmpdir(), 'conclave-replay-'));
  const F = (da: number, c: number, t: number) => ({ domain_authority: da, confidence: c, trust_score: t });

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper');
    decisions = new DecisionCollector(h.client);
    // A proposal before --since, which the replay must leave out.
    const old = await h.client.propose({ domain: 'risk.credit', author: 'agent-risk', payload: { old: true }, quorum: 1 });
    await h.client.endorse(old.proposal_id, { participant_id: 'agent-a', ...F(0.9, 0.9, 0.9) });
    await decisions.waitFor(old.proposal_id);
    since = new Date(Date.now() + 5);
    await new Promise((r) => setTimeout(r, 10));
    // C.1: two endorsements, approved by quorum.
    const c1 = await h.client.propose({ domain: 'risk.credit', author: 'agent-risk', payload: { action: 'approve_loan' }, quorum: 2 });
    await h.client.endorse(c1.proposal_id, { participant_id: 'agent-a', ...F(0.9, 0.85, 0.9) });
    await h.client.endorse(c1.proposal_id, { participant_id: 'agent-b', ...F(0.8, 0.7, 0.85) });
    // C.3: quorum 3, one endorsement, approved by timeout.
    const c3 = await h.client.propose({
      domain: 'risk.budget',
      author: 'agent-fin',
      payload: { action: 'raise_budget' },
      quorum: 3,
      expires_at: new Date(Date.now() + 1200).toISOString(),
    });
    await h.client.endorse(c3.proposal_id, { participant_id: 'agent-a', ...F(0.8, 0.75, 0.9) });
    // C.2: a weighted expert challenge against a junior's endorsement: rejected by quorum.
    const c2 = await h.client.propose({ domain: 'risk.ops', author: 'agent-ops', payload: { action: 'deploy' }, quorum: 2 });
    await h.client.challenge(c2.proposal_id, { participant_id: 'senior', ...F(0.95, 0.9, 0.95) });
    await h.client.endorse(c2.proposal_id, { participant_id: 'junior', ...F(0.4, 0.6, 0.7) });
    // An observation: auto-resolved, not re-decided.
    const obs = await h.client.propose({
      type: 'observation',
      domain: 'risk.credit',
      author: 'agent-risk',
      payload: { seen: 1 },
      quorum: 1,
    });
    Object.assign(ids, { old: old.proposal_id, c1: c1.proposal_id, c2: c2.proposal_id, c3: c3.proposal_id, obs: obs.proposal_id });
    for (const id of [c1, c2, c3, obs]) await decisions.waitFor(id.proposal_id);
  }, 60_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h.stop();
  });

  /** Events in the run's event stream: the replay must not add one. */
  const logSize = async () => (await (await h.nc.jetstreamManager()).streams.info(h.env['CONCLAVE_EVENT_STREAM'])).state.messages;

  // A default weighted threshold of 0.5: C.3's single 0.54 vote would have met quorum at once.
  const proposed = {
    schema_version: '1.0',
    domain: 'risk',
    version: 1,
    default_quorum_policy: { kind: 'weighted', threshold: 0.5 },
  };

  it('counts the outcomes that would change since --since, with examples, and writes nothing', async () => {
    const before = await logSize();
    const report = await replayDomain(h.client, { policy: parseDomainPolicy(proposed), domain: 'risk', since, examples: 5 });
    expect(report.summary).toEqual({ examined: 4, changed: 1, same: 2, refused: 0, skipped: 1 });
    expect(report.examples).toEqual([
      expect.objectContaining({
        proposal_id: ids['c3'],
        kind: 'changed',
        before: expect.objectContaining({ outcome: 'approved', trigger: 'timeout' }),
        after: expect.objectContaining({ outcome: 'approved', trigger: 'quorum', votes_for: 0.54 }),
      }),
    ]);
    const text = formatReplay(report).join('\n');
    expect(text).toContain('1 would change, 2 would not');
    expect(text).toContain(`${ids['c3']} risk.budget: approved (timeout) for 0.54 / against 0  ->  approved (quorum) for 0.54 / against 0`);
    expect(await logSize()).toBe(before);
  });

  it('as a command: conclave replay --policy <file> --domain <d> --since <time> --json', async () => {
    const file = join(dir, 'risk-v1.json');
    writeFileSync(file, JSON.stringify({ ...proposed, default_quorum_policy: { kind: 'weighted', threshold: 1.2 } }));
    const before = await logSize();
    const { code, stdout, stderr } = await runCli([
      '--prefix',
      h.prefix,
      '--stream-suffix',
      h.run,
      '--json',
      'replay',
      '--policy',
      file,
      '--domain',
      'risk',
      '--since',
      since.toISOString(),
    ]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(stdout) as ReplayReport;
    // Threshold 1.2: C.1 (1.1645) would still be pending, C.3 (0.54) would time out the same, C.2 (0.98) pending.
    expect(report.summary).toEqual({ examined: 4, changed: 2, same: 1, refused: 0, skipped: 1 });
    expect(report.examples.map((e) => e.proposal_id).sort()).toEqual([ids['c1'], ids['c2']].sort());
    expect(await logSize()).toBe(before);
  }, 60_000);

  it('a policy file that does not validate is refused with the field, before anything is read', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ ...proposed, default_quorum_policy: { kind: 'weighted', threshold: 500 } }));
    expect(() => readPolicyFile(file)).toThrow(
      expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'default_quorum_policy.threshold' }),
    );
    writeFileSync(file, '{ not json');
    expect(() => readPolicyFile(file)).toThrow(expect.objectContaining({ code: 'INVALID_JSON' }));
  });

  const runCli = (args: string[]) => runConclave(args, { NATS_URL: h.env['NATS_URL'] }, { inherit: true });
});
