import { SpanKind, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { startTracing, stopTracing } from '@conclave/service-kit';
import { CouncilHarness } from '../support/council-harness';
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
  const exporter = new tracing.InMemorySpanExporter();
  const c = new CouncilHarness();

  beforeAll(async () => {
    startTracing('council', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    await c.start();
  });
  afterAll(async () => {
    await c.stop();
    await stopTracing();
  });

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
