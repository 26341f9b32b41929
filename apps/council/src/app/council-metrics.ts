import { Injectable } from '@nestjs/common';
import { Attributes, context, Context, propagation, ROOT_CONTEXT, Span, SpanKind, trace } from '@opentelemetry/api';
import { COUNCIL_EVENT_TYPES, CouncilEvent, CouncilRunState, CouncilStage, councilRunStream } from '@conclave/council-protocol';
import { categoryOf } from '@conclave/event-log';
import { ConclaveMetrics, METRICS, tracingOn } from '@conclave/service-kit';

/**
 * Council series counted from the run events this process records (each once, whichever
 * replica records it): runs started and terminated by state, member task failures by reason,
 * and the tokens and cost members reported.
 */
@Injectable()
export class CouncilMetrics {
  constructor(metrics: ConclaveMetrics) {
    const runs = metrics.counter(METRICS.councilRuns);
    const failures = metrics.counter(METRICS.councilTaskFailures);
    const tokens = metrics.counter(METRICS.councilTokens);
    const cost = metrics.counter(METRICS.councilCost);
    metrics.onAppended(categoryOf(councilRunStream('metrics')), (events) => {
      for (const e of events as CouncilEvent[]) {
        if (e.type === COUNCIL_EVENT_TYPES.RunStarted) runs.inc({ state: 'started' });
        else if (e.type === COUNCIL_EVENT_TYPES.RunTerminated) runs.inc({ state: e.data.terminal_state });
        else if (e.type === COUNCIL_EVENT_TYPES.MemberFailed) failures.inc({ reason: e.data.reason });
        else if (e.type === COUNCIL_EVENT_TYPES.TaskAnswerRefused || e.type === COUNCIL_EVENT_TYPES.RefusedAnswerSpendRecorded)
          failures.inc({ reason: 'answer-refused' });
        const usage = (e.data as { usage?: { tokens?: unknown; cost?: unknown } }).usage;
        if (typeof usage?.tokens === 'number' && usage.tokens > 0) tokens.inc(usage.tokens);
        if (typeof usage?.cost === 'number' && usage.cost > 0) cost.inc(usage.cost);
      }
    });
  }
}

const TRACER = 'conclave';
/**
 * The context of each open `council.task` span of this process, by task id: the member task
 * transport puts it in the task message's headers, so the member's span continues it. Filled only
 * while tracing is on; an entry goes when its span ends.
 */
const openTasks = new Map<string, Context>();

/** The open `council.task` span's context of a task issued here (none: tracing off, or not issued by this process). */
export function taskTraceContext(taskId: string): Context | undefined {
  return openTasks.get(taskId);
}

type Started = Exclude<CouncilRunState, { status: 'empty' }>;

/**
 * The spans of one run driven by this process, in one trace: `council.run` from adoption to the
 * run's end, a child `council.stage` per stage of each round, and under each stage a
 * `council.task` per member task it issued, from issue to settlement. Names are fixed; the run,
 * stage, round, member and task ids are attributes. The run's span continues the trace of the
 * request that started the run (or, when the run is resumed after a restart, the trace its first
 * events were recorded in). Built from the events the run loop appends and, for what it did not
 * append itself (a reload), from the state it ends with. Nothing is done when tracing is off.
 */
export class RunSpans {
  private run: { span: Span; ctx: Context } | undefined;
  private stage: { span: Span; ctx: Context; stage: CouncilStage; round: number } | undefined;
  private readonly tasks = new Map<string, Span>();
  /** Ended (the run ended, or the loop stopped): nothing opens again. */
  private ended = false;

  constructor(
    private readonly runId: string,
    private readonly parent: Context | undefined,
  ) {}

  /** Runs the loop's work in the current stage's context, so its appends and publishes join that stage. */
  within<T>(fn: () => Promise<T>): Promise<T> {
    const ctx = this.stage?.ctx ?? this.run?.ctx;
    return ctx ? context.with(ctx, fn) : fn();
  }

  /** Events the loop appended, in order, and the run's state after them. */
  record(events: readonly CouncilEvent[], after: CouncilRunState): void {
    if (!tracingOn() || this.ended || after.status === 'empty') return;
    this.open(after);
    for (const e of events) {
      switch (e.type) {
        case COUNCIL_EVENT_TYPES.ProposalStageClosed:
          this.enter(e.data.next_stage, e.data.round);
          break;
        case COUNCIL_EVENT_TYPES.StageClosed:
          this.enter(e.data.next_stage, e.data.round);
          break;
        case COUNCIL_EVENT_TYPES.RoundClosed:
          this.enter(
            e.data.decision === 'revise' ? 'revision' : 'synthesis',
            e.data.decision === 'revise' ? e.data.round + 1 : e.data.round,
          );
          break;
        case COUNCIL_EVENT_TYPES.TaskIssued:
          this.issue(e.data.task_id, e.data.member_id, e.data.stage, e.data.round);
          break;
        case COUNCIL_EVENT_TYPES.TaskAnswerRefused:
          this.tasks.get(e.data.task_id)?.addEvent('answer refused', { 'conclave.error_code': e.data.error.code });
          break;
        default:
          break;
      }
    }
    this.reconcile(after);
  }

  /** Brings the spans in line with the state (settled tasks end, a new stage opens, the run ends). */
  reconcile(after: CouncilRunState): void {
    if (!tracingOn() || this.ended || after.status === 'empty') return;
    this.open(after);
    for (const [taskId, span] of this.tasks) {
      const task = after.tasks[taskId];
      if (task && task.status === 'issued') continue;
      span.setAttribute('conclave.council.task_status', task?.status ?? 'unknown');
      const failure = after.failures.find((f) => f.task_id === taskId);
      if (failure) span.setAttribute('conclave.council.failure_reason', failure.reason);
      span.end();
      this.tasks.delete(taskId);
      openTasks.delete(taskId);
    }
    if (after.status === 'running') {
      this.enter(after.stage, after.round);
      // Tasks issued before this loop held the run (a restart, another replica) get a span from
      // now, so a resend carries a traceparent and the settlement has a span to end.
      for (const taskId of after.task_order) {
        const task = after.tasks[taskId];
        if (task.status === 'issued' && task.stage === after.stage && task.round === after.round && !this.tasks.has(taskId))
          this.issue(taskId, task.member_id, task.stage, task.round, { 'conclave.council.task_resumed': true });
      }
    } else this.end({ 'conclave.council.terminal_state': after.terminal.terminal_state, 'conclave.council.reason': after.terminal.reason });
  }

  /** The loop stopped without the run ending (shutdown, lease lost): what is open ends here. */
  end(attributes: Attributes = { 'conclave.council.handed_over': true }): void {
    this.ended = true;
    for (const [taskId, span] of this.tasks) {
      span.end();
      openTasks.delete(taskId);
    }
    this.tasks.clear();
    this.stage?.span.end();
    this.stage = undefined;
    if (this.run) {
      this.run.span.setAttributes(attributes);
      this.run.span.end();
    }
    this.run = undefined;
  }

  private open(state: Started): void {
    if (this.run) return;
    const parent = this.parent ?? ROOT_CONTEXT;
    const span = trace
      .getTracer(TRACER)
      .startSpan(
        'council.run',
        { kind: SpanKind.INTERNAL, attributes: { 'conclave.run_id': this.runId, 'conclave.council.level': state.policy.level } },
        parent,
      );
    this.run = { span, ctx: trace.setSpan(parent, span) };
    if (state.status === 'running') this.enter(state.stage, state.round);
  }

  private enter(stage: CouncilStage, round: number): void {
    if (!this.run || (this.stage?.stage === stage && this.stage.round === round)) return;
    this.stage?.span.end();
    const span = trace.getTracer(TRACER).startSpan(
      'council.stage',
      {
        kind: SpanKind.INTERNAL,
        attributes: { 'conclave.run_id': this.runId, 'conclave.council.stage': stage, 'conclave.council.round': round },
      },
      this.run.ctx,
    );
    this.stage = { span, ctx: trace.setSpan(this.run.ctx, span), stage, round };
  }

  private issue(taskId: string, memberId: string, stage: CouncilStage, round: number, extra: Attributes = {}): void {
    if (this.tasks.has(taskId)) return;
    this.enter(stage, round);
    const parent = this.stage?.ctx ?? this.run?.ctx;
    if (!parent) return;
    const span = trace.getTracer(TRACER).startSpan(
      'council.task',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'conclave.run_id': this.runId,
          'conclave.council.stage': stage,
          'conclave.council.round': round,
          'conclave.council.member_id': memberId,
          'conclave.council.task_id': taskId,
          ...extra,
        },
      },
      parent,
    );
    this.tasks.set(taskId, span);
    openTasks.set(taskId, trace.setSpan(parent, span));
  }
}

/** The trace context a run's first events were recorded in (their `traceparent` metadata), if any. */
export function runTraceParent(metadata: Record<string, string> | undefined): Context | undefined {
  if (!tracingOn() || !metadata?.['traceparent']) return undefined;
  const ctx = propagation.extract(ROOT_CONTEXT, metadata);
  return trace.getSpanContext(ctx) ? ctx : undefined;
}

/** The active context, when a span is active (the request that starts or adopts a run). */
export function activeContext(): Context | undefined {
  return tracingOn() && trace.getActiveSpan() ? context.active() : undefined;
}
