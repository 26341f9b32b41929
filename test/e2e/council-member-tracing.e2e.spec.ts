import { SpanKind, trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { tracingOn } from '@conclave/service-kit';
import type { NatsConnection, Subscription } from 'nats';
import { CouncilHarness, tracedCouncil } from '../support/council-harness';
import { eventually } from '../support/conclave-harness';

type Finished = tracing.ReadableSpan;

/** One message seen on the wire: its task id and the trace headers it carried. */
interface Seen {
  subject: string;
  taskId: string;
  traceparent: string | undefined;
  tracestate: string | undefined;
}

/**
 * Watches a subject as a bystander (a plain subscription gets a copy of every message, JetStream
 * publishes and requests alike, beside the queue group that serves them).
 */
async function watch(nc: NatsConnection, subject: string): Promise<{ seen: Seen[]; sub: Subscription }> {
  const seen: Seen[] = [];
  const sub = nc.subscribe(subject, {
    callback: (err, m) => {
      if (err) return;
      const body = m.json<{ task_id?: string; notice?: string }>();
      if (typeof body.task_id !== 'string' || body.notice) return;
      seen.push({
        subject: m.subject,
        taskId: body.task_id,
        traceparent: m.headers?.get('traceparent') || undefined,
        tracestate: m.headers?.get('tracestate') || undefined,
      });
    },
  });
  await nc.flush();
  return { seen, sub };
}

/**
 * A council member continues the run's trace: each task message carries the `traceparent` of its
 * `council.task` span, the SDK's CouncilMember opens a CONSUMER span `receive <task subject>` as
 * that span's child, runs the handler inside it, and its answer carries that span's `traceparent`.
 */
describe('tracing: a council member continues the trace of the task it answers', () => {
  const { exporter, c } = tracedCouncil();

  it("given a traced run, then each member's span is the child of its task's council.task span, and the answer carries the member's span", async () => {
    const tasksOnWire = await watch(c.h.nc, `${c.prefix}.v1.tasks.>`);
    const answersOnWire = await watch(c.h.nc, `${c.prefix}.v1.answers.>`);
    // The span active inside each handler call, by task id.
    const activeInHandler = new Map<string, string | undefined>();
    const seeActive = {
      delayMs: (t: { task_id: string }) => (activeInHandler.set(t.task_id, trace.getActiveSpan()?.spanContext().spanId), 0),
    };
    const proposers = ['mt-builder', 'mt-skeptic', 'mt-operator'];
    c.join(Object.fromEntries([...proposers, 'mt-chair'].map((id) => [id, cleanBehaviour(seeActive)])));

    const { runId, traceId } = await trace.getTracer('agent').startActiveSpan('owner starts a council', async (span) => {
      const id = await c.client.start({
        goal_contract: scriptedGoalContract(),
        panel: scriptedPanel({ proposers, chair: 'mt-chair' }),
        policy: { stage_timeout_ms: 5_000 },
      });
      span.end();
      return { runId: id, traceId: span.spanContext().traceId };
    });
    expect((await c.decisions.waitFor(runId)).terminal_state).toBe('decided');
    const record = await c.client.get(runId, 'human-owner');
    const taskIds = record.tasks.map((t) => t.task_id).sort();
    expect(taskIds.length).toBeGreaterThan(0);

    const ofRun = (s: Finished) => s.attributes['conclave.run_id'] === runId;
    const isMember = (s: Finished) => s.kind === SpanKind.CONSUMER && s.name.startsWith(`receive ${c.prefix}.v1.tasks.`) && ofRun(s);
    // A member's span ends once it has the verdict; the controller's task span once the task settles.
    const spans = await eventually(
      async () => {
        const all = exporter.getFinishedSpans();
        const done = (name: string) => all.filter((s) => (name === 'member' ? isMember(s) : s.name === name && ofRun(s))).length;
        return done('council.task') === taskIds.length && done('member') === taskIds.length ? all : undefined;
      },
      10_000,
      'every task and member span',
    );
    const taskSpans = new Map(
      spans.filter((s) => s.name === 'council.task' && ofRun(s)).map((s) => [s.attributes['conclave.council.task_id'], s]),
    );
    const memberSpans = spans.filter(isMember);
    expect([...taskSpans.keys()].sort()).toEqual(taskIds);

    for (const member of memberSpans) {
      const taskId = String(member.attributes['conclave.council.task_id']);
      const task = record.tasks.find((t) => t.task_id === taskId);
      const parent = taskSpans.get(taskId);
      // The member's span: the child of the controller's span of the same task, in the run's trace.
      expect(parent).toBeDefined();
      expect(member.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
      expect(member.spanContext().traceId).toBe(traceId);
      expect(member.name).toBe(`receive ${c.prefix}.v1.tasks.${task?.member_id}`);
      expect(member.attributes).toMatchObject({
        'conclave.council.stage': task?.stage,
        'conclave.council.member_id': task?.member_id,
        'messaging.destination.name': `${c.prefix}.v1.tasks.${task?.member_id}`,
      });
      // The task message carried the task span's context; the handler ran inside the member's span.
      const sent = tasksOnWire.seen.filter((m) => m.taskId === taskId);
      expect(sent.length).toBeGreaterThan(0);
      for (const m of sent) expect(m.traceparent).toBe(`00-${traceId}-${parent?.spanContext().spanId}-01`);
      expect(activeInHandler.get(taskId)).toBe(member.spanContext().spanId);
      // The answer carries the member's span back.
      const answers = answersOnWire.seen.filter((m) => m.taskId === taskId);
      expect(answers.length).toBeGreaterThan(0);
      for (const a of answers) expect(a.traceparent).toBe(`00-${traceId}-${member.spanContext().spanId}-01`);
      // The controller's receipt of the answer: a SERVER span continuing it, as for every command.
      const received = spans.filter((s) => s.name === 'v1.answers' && s.parentSpanContext?.spanId === member.spanContext().spanId);
      expect(received.length).toBeGreaterThan(0);
      for (const r of received) {
        expect(r.kind).toBe(SpanKind.SERVER);
        expect(r.spanContext().traceId).toBe(traceId);
        expect(r.attributes).toMatchObject({
          'conclave.run_id': runId,
          'messaging.destination.name': `${c.prefix}.v1.answers.${task?.member_id}`,
        });
      }
    }
    expect(memberSpans.map((s) => s.attributes['conclave.council.task_id']).sort()).toEqual(taskIds);
    tasksOnWire.sub.unsubscribe();
    answersOnWire.sub.unsubscribe();
  });
});

describe('tracing off: council task messages and answers carry no trace headers', () => {
  const c = new CouncilHarness();

  beforeAll(() => c.start());
  afterAll(() => c.stop());

  it('given a run with tracing off, then no task message and no answer has a traceparent or tracestate', async () => {
    expect(tracingOn()).toBe(false);
    const tasksOnWire = await watch(c.h.nc, `${c.prefix}.v1.tasks.>`);
    const answersOnWire = await watch(c.h.nc, `${c.prefix}.v1.answers.>`);
    const proposers = ['mo-builder', 'mo-skeptic', 'mo-operator'];
    c.join(Object.fromEntries([...proposers, 'mo-chair'].map((id) => [id, cleanBehaviour()])));

    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'mo-chair' }),
      policy: { stage_timeout_ms: 5_000 },
    });
    expect((await c.decisions.waitFor(runId)).terminal_state).toBe('decided');
    const record = await c.client.get(runId, 'human-owner');

    const sentTasks = new Set(tasksOnWire.seen.map((m) => m.taskId));
    expect([...sentTasks].sort()).toEqual(record.tasks.map((t) => t.task_id).sort());
    expect(answersOnWire.seen.length).toBeGreaterThanOrEqual(record.tasks.length);
    const withTrace = [...tasksOnWire.seen, ...answersOnWire.seen].filter((m) => m.traceparent !== undefined || m.tracestate !== undefined);
    expect(withTrace).toEqual([]);
    tasksOnWire.sub.unsubscribe();
    answersOnWire.sub.unsubscribe();
  });
});
