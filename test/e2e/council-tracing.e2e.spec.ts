import { SpanKind, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { EVENT_LOG } from '@conclave/service-kit';
import type { EventLog } from '@conclave/event-log';
import { CouncilEvent, foldRun, stableJson } from '@conclave/council-protocol';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the service's repository, read in-process as council-replicas.e2e does
import { RunRepository } from '../../apps/council/src/app/run-repository';
import { CouncilHarness, tracedCouncil } from '../support/council-harness';
import { eventually } from '../support/conclave-harness';

type Finished = tracing.ReadableSpan;

/**
 * A council run in one trace: the council service with tracing on (an in-memory exporter instead
 * of OTLP) and scripted members. The run's span is the child of the start request's span; each
 * stage of each round is a child of the run's span; each member task is a child of the stage that
 * issued it. Names are fixed (`council.run`, `council.stage`, `council.task`); run, stage, round
 * and member are attributes.
 */
describe('tracing: one trace shows a council run, its stages and its member tasks', () => {
  const { exporter, c } = tracedCouncil();

  it('given a clean two-round run started inside an agent span, then the run, stage and task spans form one tree in that trace', async () => {
    const proposers = ['tr-builder', 'tr-skeptic', 'tr-operator'];
    const chair = 'tr-chair';
    c.join(Object.fromEntries([...proposers, chair].map((id) => [id, cleanBehaviour()])));

    const { runId, traceId } = await trace.getTracer('agent').startActiveSpan('owner starts a council', async (span) => {
      const id = await c.client.start({
        goal_contract: scriptedGoalContract(),
        panel: scriptedPanel({ proposers, chair }),
        policy: { stage_timeout_ms: 5_000 },
      });
      span.end();
      return { runId: id, traceId: span.spanContext().traceId };
    });
    const decided = await c.decisions.waitFor(runId);
    expect(decided.terminal_state).toBe('decided');
    const record = await c.client.get(runId, 'human-owner');

    const ofRun = (s: Finished) => s.attributes['conclave.run_id'] === runId;
    // The run span ends when the run does; the decision is published after that.
    const run = await eventually(
      async () => exporter.getFinishedSpans().find((s) => s.name === 'council.run' && ofRun(s)),
      10_000,
      'the run span',
    );
    const spans = exporter.getFinishedSpans();
    expect(spans.filter((s) => s.name === 'council.run' && ofRun(s))).toHaveLength(1);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const stages = spans.filter((s) => s.name === 'council.stage' && ofRun(s)).sort(byStartThenLifecycle);
    const tasks = spans.filter((s) => s.name === 'council.task' && ofRun(s));

    // The run: in the agent's trace, under the service's span of the start request.
    expect(run.spanContext().traceId).toBe(traceId);
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.attributes).toMatchObject({ 'conclave.council.terminal_state': 'decided' });
    let top: Finished | undefined = run;
    const ancestry: string[] = [];
    while (top?.parentSpanContext?.spanId && byId.has(top.parentSpanContext.spanId)) {
      top = byId.get(top.parentSpanContext.spanId);
      if (top) ancestry.push(top.name);
    }
    expect(ancestry).toContain('owner starts a council');

    // Each stage of each round, in order, as children of the run.
    expect(stages.map((s) => `${s.attributes['conclave.council.round']}:${s.attributes['conclave.council.stage']}`)).toEqual([
      '1:proposal',
      '1:review',
      '1:conflict-map',
      '1:evaluate',
      '2:revision',
      '2:review',
      '2:conflict-map',
      '2:evaluate',
      '2:synthesis',
    ]);
    for (const s of stages) {
      expect(s.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
      expect(s.spanContext().traceId).toBe(traceId);
    }

    // One span per member task, the child of the stage (and round) that issued it.
    expect(tasks.map((t) => t.attributes['conclave.council.task_id']).sort()).toEqual(record.tasks.map((t) => t.task_id).sort());
    for (const t of tasks) {
      const task = record.tasks.find((x) => x.task_id === t.attributes['conclave.council.task_id']);
      const parent = byId.get(t.parentSpanContext?.spanId ?? '');
      expect(parent?.name).toBe('council.stage');
      expect(parent?.attributes).toMatchObject({ 'conclave.council.stage': task?.stage, 'conclave.council.round': task?.round });
      expect(t.attributes).toMatchObject({
        'conclave.council.stage': task?.stage,
        'conclave.council.round': task?.round,
        'conclave.council.member_id': task?.member_id,
        'conclave.council.task_status': 'answered',
      });
      expect(t.spanContext().traceId).toBe(traceId);
    }
    // Low-cardinality names: ids only ever in attributes.
    expect(new Set([run, ...stages, ...tasks].map((s) => s.name))).toEqual(new Set(['council.run', 'council.stage', 'council.task']));

    // The decision's publish by the outbox continues the same trace, inside the run's tree.
    const publish = await eventually(
      async () =>
        exporter
          .getFinishedSpans()
          .find((s) => s.name === 'publish council-outbox' && s.attributes['messaging.message.id'] === decided.event_id),
      10_000,
      'the publish span of the decision',
    );
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(publish.spanContext().traceId).toBe(traceId);
    expect(byId.has(publish.parentSpanContext?.spanId ?? '')).toBe(true);
  });
});

/**
 * A run that outlives its controller stays in one trace: the replacement resumes the run from the
 * log and its spans continue the trace the run's first events were recorded in.
 */
describe('tracing: a run resumed after a restart stays in its trace', () => {
  const { exporter, c } = tracedCouncil();

  it("given a run killed during review, when a new controller resumes it, then both controllers' run spans are in the trace of the start request", async () => {
    const proposers = ['rt-builder', 'rt-skeptic', 'rt-operator'];
    const members = c.join({
      ...Object.fromEntries(
        proposers.map((id) => [id, cleanBehaviour(id === 'rt-operator' ? { delayMs: (t) => (t.stage === 'review' ? 700 : 0) } : {})]),
      ),
      'rt-chair': cleanBehaviour(),
    });
    const { runId, traceId } = await trace.getTracer('agent').startActiveSpan('owner starts a council', async (span) => {
      const id = await c.client.start({
        goal_contract: scriptedGoalContract(),
        panel: scriptedPanel({ proposers, chair: 'rt-chair' }),
        policy: { stage_timeout_ms: 8_000 },
      });
      span.end();
      return { runId: id, traceId: span.spanContext().traceId };
    });
    const slow = members['rt-operator'];
    await slow.until(() => slow.tasks.some((t) => t.stage === 'review'), 10_000, 'the slow review to start');
    await c.h.kill(c.h.instances[0]);
    await c.h.add('council');
    expect((await c.decisions.waitFor(runId)).terminal_state).toMatch(/^decided/);

    const runSpans = await eventually(
      async () => {
        const found = exporter.getFinishedSpans().filter((s) => s.name === 'council.run' && s.attributes['conclave.run_id'] === runId);
        return found.length >= 2 ? found : undefined;
      },
      10_000,
      'both run spans',
    );
    expect(runSpans.map((s) => s.spanContext().traceId)).toEqual([traceId, traceId]);
    expect(
      runSpans.map((s) => s.attributes['conclave.council.handed_over'] ?? s.attributes['conclave.council.terminal_state']).sort(),
    ).toEqual([true, 'decided'].sort());
    const stages = exporter.getFinishedSpans().filter((s) => s.name === 'council.stage' && s.attributes['conclave.run_id'] === runId);
    expect(new Set(stages.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));

    // The review task still open at the kill: the new controller gives it a task span (which its
    // resend carries), in the same trace, under its own review stage, ended by the answer.
    const reviewTask = slow.tasks.find((t) => t.stage === 'review')?.task_id;
    const taskSpans = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'council.task' && s.attributes['conclave.council.task_id'] === reviewTask);
    const resumed = taskSpans.find((s) => s.attributes['conclave.council.task_resumed'] === true);
    expect(taskSpans).toHaveLength(2);
    expect(resumed?.spanContext().traceId).toBe(traceId);
    expect(resumed?.attributes['conclave.council.task_status']).toBe('answered');
    const resumedStage = stages.find((s) => s.spanContext().spanId === resumed?.parentSpanContext?.spanId);
    expect(resumedStage?.attributes).toMatchObject({ 'conclave.council.stage': 'review' });
  });
});

/**
 * What the run's stage spans cover is the controller's own work: a run driven here is decided on
 * the state in memory, and reading it back (the decision's publication, the owner's read of the
 * record) costs a version check, never a read and fold of the run's stream.
 */
describe('council: a run driven here is never read back from the log', () => {
  const c = new CouncilHarness();

  beforeAll(() => c.start());
  afterAll(() => c.stop());

  it('given a run started and driven by this replica, when it decides and the owner reads it, then its stream is never read', async () => {
    const log = c.h.instances[0].app.get<EventLog>(EVENT_LOG);
    const read = jest.spyOn(log, 'read');
    const proposers = ['rd-builder', 'rd-skeptic', 'rd-operator'];
    c.join(Object.fromEntries([...proposers, 'rd-chair'].map((id) => [id, cleanBehaviour()])));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'rd-chair' }),
      policy: { stage_timeout_ms: 5_000 },
    });
    expect((await c.decisions.waitFor(runId)).terminal_state).toBe('decided');
    const record = await c.client.get(runId, 'human-owner');
    expect(record.tasks.length).toBeGreaterThan(0);
    expect(read.mock.calls.filter(([stream]) => stream === `council-run-${runId}`)).toEqual([]);
    read.mockRestore();
  });
});

/**
 * The kept latest states under concurrent writers: two replicas take the members' answers (a
 * replica that does not drive a run appends the answer itself), three runs go at once, and
 * readers on both replicas load the runs throughout. Every load equals the fold of the log read
 * at the same version.
 */
describe('council: the latest state kept per run always equals the log', () => {
  const c = new CouncilHarness();

  beforeAll(async () => {
    await c.start();
    await c.h.add('council');
  });
  afterAll(() => c.stop());

  it('given three concurrent runs over two replicas and readers on both, then every load is the fold of the log at its version', async () => {
    const repos = c.h.instances.map((i) => i.app.get(RunRepository));
    const log = c.h.instances[0].app.get<EventLog<CouncilEvent>>(EVENT_LOG);
    const runs = ['ba', 'bb', 'bc'].map((tag) => ({
      proposers: ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`),
      chair: `${tag}-chair`,
    }));
    for (const r of runs) c.join(Object.fromEntries([...r.proposers, r.chair].map((id) => [id, cleanBehaviour({ delayMs: () => 20 })])));
    const runIds = await Promise.all(
      runs.map((r) =>
        c.client.start({
          goal_contract: scriptedGoalContract(),
          panel: scriptedPanel({ proposers: r.proposers, chair: r.chair }),
          policy: { stage_timeout_ms: 5_000 },
        }),
      ),
    );
    let compared = 0;
    const mismatches: string[] = [];
    let done = false;
    const reader = async (repo: RunRepository) => {
      while (!done) {
        for (const runId of runIds) {
          const loaded = await repo.load(runId);
          const fresh = await log.read(`council-run-${runId}`);
          if (fresh.version !== loaded.version) continue;
          compared++;
          if (stableJson(foldRun(fresh.events.map((e) => e.event))) !== stableJson(loaded.state))
            mismatches.push(`${runId}@${loaded.version}`);
        }
      }
    };
    const readers = [...repos, ...repos].map(reader);
    const decided = await Promise.all(runIds.map((id) => c.decisions.waitFor(id)));
    done = true;
    await Promise.all(readers);
    expect(decided.map((d) => d.terminal_state)).toEqual(['decided', 'decided', 'decided']);
    expect(mismatches).toEqual([]);
    expect(compared).toBeGreaterThan(runIds.length);
  });
});

const LIFECYCLE = ['proposal', 'revision', 'review', 'conflict-map', 'frame-check', 'frame-decision', 'evaluate', 'synthesis'];

/** By start time; stages opened by the same commit (an instant stage, then the next) by round and lifecycle order. */
function byStartThenLifecycle(a: Finished, b: Finished): number {
  const ns = (s: Finished) => s.startTime[0] * 1e9 + s.startTime[1];
  const rank = (s: Finished) =>
    Number(s.attributes['conclave.council.round']) * 100 + LIFECYCLE.indexOf(String(s.attributes['conclave.council.stage']));
  return Math.abs(ns(a) - ns(b)) < 1e5 ? rank(a) - rank(b) : ns(a) - ns(b);
}
