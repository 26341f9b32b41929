import { CouncilTask } from '@conclave/sdk';
import { cleanBehaviour, scriptedArtifact, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';
import { httpAgent, McpAgent } from '../support/mcp-client';

/**
 * A Council member that is an MCP client: apps/council runs for real; one proposer of the panel
 * answers its tasks only through `next_council_task` / `submit_council_answer`; the others are
 * the SDK's scripted members. The run must decide with the MCP member's work in it.
 */
describe('MCP server: a council member through next_council_task / submit_council_answer', () => {
  const c = new CouncilHarness();
  let agent: McpAgent;
  const memberId = 'mcp-builder';

  beforeAll(async () => {
    await c.start();
    agent = await httpAgent({ ...c.h.env, CONCLAVE_PARTICIPANT: memberId, CONCLAVE_MCP_COUNCIL_MEMBER: 'true' });
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    await c.stop();
  });

  it('answers every stage it is sent; a refused answer comes back with its refusal and is corrected; the run decides', async () => {
    const proposers = [memberId, 'mcp-skeptic', 'mcp-operator'];
    c.join({ 'mcp-skeptic': cleanBehaviour(), 'mcp-operator': cleanBehaviour(), 'mcp-chair': cleanBehaviour() });
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'mcp-chair' }),
      policy: { stage_timeout_ms: 8_000 },
    });

    const stages: string[] = [];
    const verdicts: unknown[] = [];
    let refusedOnce = false;
    let sawRefusal = false;
    const decided = c.decisions.waitFor(runId, 30_000);
    let done = false;
    void decided.finally(() => (done = true));
    while (!done) {
      const { task } = await agent.call<{ task: CouncilTask | null }>('next_council_task', { timeout_ms: 500 });
      if (!task) continue;
      expect(task.run_id).toBe(runId);
      stages.push(task.stage);
      if (task.refusal) sawRefusal = true;
      if (task.stage === 'proposal' && !refusedOnce) {
        // A candidate without its position: the controller refuses it with a code.
        refusedOnce = true;
        const { verdict } = await agent.call<{ verdict: { ok: boolean; error?: { code: string } } }>('submit_council_answer', {
          task_id: task.task_id,
          artifact: { candidate_id: `cand-${memberId}-bad`, author_member_id: memberId, version: 1 },
        });
        expect(verdict.ok).toBe(false);
        expect(verdict.error?.code).toEqual(expect.any(String));
        continue;
      }
      const { verdict } = await agent.call<{ verdict: unknown }>('submit_council_answer', {
        task_id: task.task_id,
        artifact: scriptedArtifact(task, memberId, cleanBehaviour()),
        usage: { cost: 0.01, tokens: 120 },
      });
      verdicts.push(verdict);
    }
    const d = await decided;
    expect(d.terminal_state).toMatch(/^decided/);
    expect(sawRefusal).toBe(true);
    expect(stages[0]).toBe('proposal');
    expect(stages.filter((s) => s === 'proposal')).toHaveLength(2);
    expect(stages).toContain('review');
    expect(verdicts.every((v) => (v as { ok: boolean }).ok)).toBe(true);
    const run = await c.client.get(runId, 'human-owner');
    // The MCP member's candidate is in the record, under its own authorship (shown to the owner after the run).
    expect(JSON.stringify(run)).toContain(`"author_member_id":"${memberId}"`);

    // Answering a task that is not open (never sent, or already answered) is a typed refusal.
    expect(await agent.refusal('submit_council_answer', { task_id: 'no-such-task', artifact: {} })).toMatchObject({ code: 'UNKNOWN_TASK' });
  });
});
