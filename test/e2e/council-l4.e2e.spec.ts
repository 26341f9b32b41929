import { Command } from 'commander';
import { MemberDescriptor, RunRecord } from '@conclave/council-protocol';
import { ScriptedMember, scriptedDescriptor, scriptedGoalContract } from '@conclave/sdk/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI's commands are exercised in-process, as in council-cli.e2e
import { registerCouncilCommands } from '../../apps/cli/src/commands/council.command';
import { CouncilHarness } from '../support/council-harness';
import { eventually } from '../support/conclave-harness';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * council:L4 end to end on apps/council: the policy's aggregation recorded at each checkpoint and
 * shown to the chair on the blind surface; chair selection by rotation and exploration slots
 * from the evaluation reactor's history; the concentration audit and the estimates through the
 * `conclave council` CLI.
 */
describe('council:L4 contextual evaluation end to end (apps/council over NATS)', () => {
  const c = new CouncilHarness();
  const owner = 'human-owner';
  const chairs = ['l4-chair-x', 'l4-chair-y'];
  const proposers = ['l4-builder', 'l4-skeptic', 'l4-operator'];
  const panel: MemberDescriptor[] = [
    ...proposers.map((id) => scriptedDescriptor(id, id.slice(3))),
    { ...scriptedDescriptor(chairs[0], 'chair', ['chair']), model_family: 'family-x', model_version: 'v1' },
    { ...scriptedDescriptor(chairs[1], 'chair', ['chair']), model_family: 'family-y', model_version: 'v1' },
  ];
  let members: Record<string, ScriptedMember>;
  /** Scores by blind letter: A 5, B 2, C 4, so the ranking methods have a clear order. */
  const byLetter: Record<string, number> = { A: 5, B: 2, C: 4 };

  beforeAll(async () => {
    await c.start();
    members = c.join(
      Object.fromEntries([...proposers, ...chairs].map((id) => [id, { score: (ref: string) => byLetter[ref.charAt(5)] ?? 3 }])),
    );
  });
  afterAll(() => c.stop());

  async function request<T>(command: string, body: unknown): Promise<T> {
    const msg = await c.h.nc.request(`${c.prefix}.v1.${command}`, encoder.encode(JSON.stringify(body)), { timeout: 10_000 });
    return JSON.parse(decoder.decode(msg.data)) as T;
  }

  async function council(domain: string, id: string, policy: Record<string, unknown>): Promise<RunRecord> {
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${id}`, domain }),
      panel,
      policy,
      run_id: id,
    });
    await c.decisions.waitFor(runId);
    return c.client.get(runId, owner);
  }

  /** The reactor has folded `n` ended runs of the domain (chair history is read from it). */
  const folded = (domain: string, n: number) =>
    eventually(
      async () => {
        const r = await request<{ ended_runs: number }>('capability.estimates', { domain });
        return r.ended_runs >= n ? r : undefined;
      },
      10_000,
      `${n} ended run(s) of ${domain} in the evaluation reactor`,
    );

  const chairOf = (r: RunRecord) => r.tasks.find((t) => t.stage === 'synthesis')?.member_id;

  async function cli(...args: string[]): Promise<string[]> {
    const out: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void out.push(line));
    try {
      const program = new Command().option('--nats <url>').option('--json', '', false).exitOverride();
      registerCouncilCommands(program);
      await program.parseAsync(['node', 'conclave', ...args]);
      return out;
    } finally {
      log.mockRestore();
    }
  }

  it('a policy at council:L4 without an aggregation, or a GoalContract without a domain, is refused with its field', async () => {
    const start = (policy: unknown, domain?: string) =>
      request('start', { goal_contract: scriptedGoalContract(domain ? { domain } : {}), panel, policy, actor: owner });
    expect(await start({ level: 'council:L4' }, 'ops')).toMatchObject({
      ok: false,
      error: { code: 'SCHEMA_VIOLATION', field: 'policy.aggregation' },
    });
    expect(await start({ level: 'council:L4', aggregation: 'borda' })).toMatchObject({
      ok: false,
      error: { code: 'SCHEMA_VIOLATION', field: 'goal_contract.domain' },
    });
  });

  it('ranked pairs: every checkpoint records the aggregation and its explanation; the chair sees it by blind refs only', async () => {
    const r = await council('pricing', 'l4_agg_1', { level: 'council:L4', aggregation: 'ranked-pairs', stage_timeout_ms: 5_000 });
    const cp = r.checkpoints[0];
    expect(cp.aggregation).toMatchObject({ method: 'ranked-pairs', seed: expect.stringContaining(cp.checkpoint_id) });
    expect(cp.aggregation?.explanation.layers_not_used).toEqual(['capability-estimation', 'outcome-evaluation']);
    // Every checkpoint of the run, not only the first, records its own seeded aggregation and explanation.
    for (const k of r.checkpoints) {
      expect(k.aggregation).toMatchObject({ method: 'ranked-pairs', seed: expect.stringContaining(k.checkpoint_id) });
      expect(k.aggregation?.explanation.steps.length).toBeGreaterThan(0);
    }
    // Candidate A (scored 5 by everyone) is selected, and the checkpoint's score is its mean rubric score.
    const a = r.lineage.find((l) => l.label === 'Candidate A')?.versions[0] as string;
    expect(cp.aggregation?.selected).toBe(a);
    expect(cp.score).toBe(cp.scores[a]);
    const chair = chairOf(r) as string;
    const task = members[chair].tasks.find((t) => t.run_id === r.run_id && t.stage === 'synthesis');
    const agg = task?.inputs['aggregation'] as { tiers: string[][]; selected: string };
    expect(agg.selected).toBe('anon-A-v1');
    expect(agg.tiers[0]).toEqual(['anon-A-v1']);
    const text = JSON.stringify(task?.inputs);
    expect(text).not.toContain('cand-');
    for (const id of [...proposers, ...chairs]) expect(text).not.toContain(id);
  });

  it('rotation: the least recent chair of the domain chairs next; an exploration slot is recorded as one; the audit and estimates show it in the CLI', async () => {
    const rotation = { level: 'council:L4', aggregation: 'borda', chair_selection: 'rotation', stage_timeout_ms: 5_000 };
    const r1 = await council('ops', 'l4_ops_1', rotation);
    await folded('ops', 1);
    const r2 = await council('ops', 'l4_ops_2', rotation);
    await folded('ops', 2);
    const r3 = await council('ops', 'l4_ops_3', rotation);
    await folded('ops', 3);
    // Never-chaired first, then the least recent: X, Y, X (or Y, X, Y as the seed breaks the first tie).
    expect(chairOf(r2)).not.toBe(chairOf(r1));
    expect(chairOf(r3)).toBe(chairOf(r1));
    for (const r of [r1, r2, r3]) expect(r.chair_selection).toMatchObject({ policy: 'rotation', chair: chairOf(r), exploration: false });

    // Exploration at rate 1: a member with fewer than 1 synthesizer observation in 'ops' chairs, and the record says so.
    const explore = { ...rotation, chair_selection: { policy: 'exploration', rate: 1, min_observations: 1, base: 'rotation' } };
    const r4 = await council('ops', 'l4_ops_4', explore);
    expect(r4.chair_selection).toMatchObject({ policy: 'exploration', exploration: true, chair: chairOf(r4) });
    expect(r4.chair_selection?.reason).toContain('exploration slot');
    await folded('ops', 4);

    // The concentration audit (16.7): four decided runs in ops; chairs split between the two chairs.
    const audit = JSON.parse(
      (await cli('--json', 'council', '--council-prefix', c.prefix, 'concentration', '--domain', 'ops', '--period', 'all'))[0],
    ) as {
      audit: { cells: { domain: string; run_ids: string[]; dimensions: { chairs: { total: number; shares: { who: string }[] } } }[] };
    };
    expect(audit.audit.cells).toHaveLength(1);
    expect(audit.audit.cells[0].run_ids).toEqual(['l4_ops_1', 'l4_ops_2', 'l4_ops_3', 'l4_ops_4']);
    expect(audit.audit.cells[0].dimensions.chairs.total).toBe(4);
    expect(audit.audit.cells[0].dimensions.chairs.shares.map((s) => s.who).sort()).toEqual([...chairs].sort());
    const text = await cli('council', '--council-prefix', c.prefix, 'concentration', '--domain', 'ops', '--period', 'all');
    expect(text[0]).toBe('1 cell(s); 0 run(s) not decided, not counted');
    expect(text.some((l) => /^\s+chairs\s+HHI /.test(l))).toBe(true);

    // Estimates in the CLI: peer preference only (no outcome yet), per scope.
    const estimates = await cli('council', '--council-prefix', c.prefix, 'estimates', '--domain', 'ops');
    expect(estimates[0]).toMatch(/^\d+ estimate\(s\) over 4 ended run\(s\)$/);
    expect(estimates.some((l) => l.includes('ops  proposer') && l.includes('outcomes 0'))).toBe(true);
    const calibration = await cli('council', '--council-prefix', c.prefix, 'calibration', '--domain', 'ops');
    expect(calibration).toEqual(['0 scored forecast(s)']);
  });

  it('given a policy naming a chair selection and an explicit chair_order, when the run starts, then the explicit order chairs and no selection is recorded', async () => {
    for (const chair of chairs) {
      const r = await council('explicit', `l4_explicit_${chair.slice(-1)}`, {
        level: 'council:L4',
        aggregation: 'borda',
        chair_selection: 'rotation',
        chair_order: [chair],
        stage_timeout_ms: 5_000,
      });
      expect(chairOf(r)).toBe(chair);
      expect(r.chair_selection).toBeUndefined();
    }
  });
});
