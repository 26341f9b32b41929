import { cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';
import { sampleValue } from '../support/metrics-text';
import { eventually } from '../support/conclave-harness';

/** The council's /metrics after a real run whose members report usage and one of whom times out. */
describe('observability: council run metrics', () => {
  const c = new CouncilHarness();

  beforeAll(() => c.start());
  afterAll(() => c.stop());

  it('runs by state, member task failures by reason, tokens and cost', async () => {
    const proposers = ['m-builder', 'm-skeptic', 'm-operator'];
    const chair = 'm-chair';
    const silent = proposers[2];
    c.join(
      Object.fromEntries(
        [...proposers, chair].map((id) => [
          id,
          cleanBehaviour({ usage: { tokens: 100, cost: 0.5 }, ...(id === silent ? { silent: (t) => t.stage === 'proposal' } : {}) }),
        ]),
      ),
    );
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair }),
      // Long enough for a task's trip through the member's durable queue on a loaded machine.
      policy: { stage_timeout_ms: 2_000, stage_timeouts_ms: { synthesis: 3_000 } },
    });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);

    const url = await c.h.instances[0].app.getUrl();
    const text = await eventually(
      async () => {
        const t = await (await fetch(`${url}/metrics`)).text();
        return /^conclave_council_runs_total\{state="decided/m.test(t) ? t : undefined;
      },
      5_000,
      'the terminal state counted',
    );
    expect(sampleValue(text, /^conclave_council_runs_total\{state="started",service="council"\}/)).toBe(1);
    expect(sampleValue(text, new RegExp(`^conclave_council_runs_total\\{state="${d.terminal_state}",service="council"\\}`))).toBe(1);
    expect(sampleValue(text, /^conclave_council_member_task_failures_total\{reason="timeout",service="council"\}/)).toBe(1);
    // Every answer reports 100 tokens and 0.5 of cost.
    const tokens = sampleValue(text, /^conclave_council_tokens_total\{service="council"\}/);
    expect(tokens).toBeGreaterThanOrEqual(500);
    expect(tokens % 100).toBe(0);
    expect(sampleValue(text, /^conclave_council_cost_total\{service="council"\}/)).toBe(tokens / 200);
    expect(sampleValue(text, /^conclave_eventlog_appends_total\{category="council-run",result="ok",service="council"\}/)).toBeGreaterThan(
      3,
    );
    // Member answers are requests like any other, counted under one subject (no member id in the label).
    expect(sampleValue(text, /^conclave_api_requests_total\{subject="v1.answers",service="council"\}/)).toBeGreaterThanOrEqual(5);
    expect(text).not.toContain(runId);
  });
});
