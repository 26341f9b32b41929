import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { CancelNotice, CouncilError, CouncilTaskRequest, MemberVerdict } from '@conclave/council-protocol';
import {
  acpStreamNames,
  councilSubjects,
  ensureCouncilTaskStream,
  ensureMemberTaskConsumer,
  publishJsonOnce,
  QUEUE_GROUPS,
  isReplyInbox,
  readRequestBody,
} from '@conclave/messaging';
import { AcpError } from '@conclave/acp-protocol';
import {
  CommandContext,
  NATS_CONNECTION,
  RateLimitedError,
  RejectionRecorder,
  REQUEST_OBSERVER,
  SERVICE_CONFIG,
  tracingOn,
} from '@conclave/service-kit';
import type { CommandRequest, Identity, RequestObserver } from '@conclave/service-kit';
import { propagation } from '@opentelemetry/api';
import { headers, Msg, MsgHdrs, NatsConnection, Subscription } from 'nats';
import { CouncilConfig } from './council.config';
import { taskTraceContext } from './council-metrics';

const encoder = new TextEncoder();
/** The answers' name in the request metrics, spans and log lines (the member id stays out of the label). */
const ANSWER_PATTERN = 'v1.answers';
/** An answer not recorded through no fault of the member (the log unavailable, the replica stopping): send it again. */
const ANSWER_AGAIN: MemberVerdict = {
  ok: false,
  retry: true,
  error: { code: 'INTERNAL', message: 'the answer could not be recorded; send it again' },
};

export type AnswerHandler = (memberId: string, body: unknown) => Promise<MemberVerdict>;

/**
 * The member task transport: tasks and cancel notices go to each member's durable queue on
 * JetStream (`<prefix>.v1.tasks.<member_id>`, stream COUNCIL_TASKS), kept until the member
 * acknowledges them, so a member that is briefly offline still receives its task when it comes
 * back. This service makes each member's queue (consumer `member-<id>`, pull, no deliver subject)
 * before that member's first task: members only bind to it (they may not create consumers, NATS
 * accounts). Members answer by request on `<prefix>.v1.answers.<member_id>` (served by every replica in
 * the council queue group); the reply is the verdict. Nothing here decides: the run driver does.
 */
@Injectable()
export class MemberTaskTransport implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('MemberTaskTransport');
  private readonly subjects;
  private readonly stream: string;
  private answers: Subscription | undefined;
  /** Members whose queue this process made or found: one request per member per process. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    private readonly context: CommandContext,
    @Inject(REQUEST_OBSERVER) private readonly observer: RequestObserver,
    private readonly rejections: RejectionRecorder,
  ) {
    this.subjects = councilSubjects(config.councilPrefix);
    this.stream = acpStreamNames(config.streamSuffix).councilTasks;
  }

  async onModuleInit(): Promise<void> {
    await ensureCouncilTaskStream(await this.nc.jetstreamManager(), this.stream, this.config.councilPrefix, this.config.logReplicas);
  }

  /**
   * Queues a task for its member; `Nats-Msg-Id` = the task id, so a resend after a restart is not
   * queued twice. With tracing on, the message carries the trace context of the task's
   * `council.task` span (`traceparent`, `tracestate`), so the member's span continues it.
   */
  async publishTask(memberId: string, request: CouncilTaskRequest): Promise<void> {
    // Read before the first await: the span may end (the task times out) while the queue is made.
    const traced = taskHeaders(request.task_id);
    await this.memberQueue(memberId);
    const subject = this.subjects.task(memberId);
    if (!traced) await publishJsonOnce(this.nc.jetstream(), subject, request, request.task_id);
    else await this.nc.jetstream().publish(subject, encoder.encode(JSON.stringify(request)), { msgID: request.task_id, headers: traced });
  }

  async publishCancel(memberId: string, notice: CancelNotice): Promise<void> {
    await this.memberQueue(memberId);
    await publishJsonOnce(this.nc.jetstream(), this.subjects.task(memberId), notice, `${notice.task_id}:cancel`);
  }

  /** Makes the member's queue once per process; a failure is forgotten, so the next task tries again. */
  private memberQueue(memberId: string): Promise<void> {
    let made = this.queues.get(memberId);
    if (!made) {
      made = this.nc
        .jetstreamManager()
        .then((jsm) => ensureMemberTaskConsumer(jsm, this.stream, this.config.councilPrefix, memberId))
        .then(() => undefined);
      made.catch(() => this.queues.delete(memberId));
      this.queues.set(memberId, made);
    }
    return made;
  }

  /** Serves `<prefix>.v1.answers.*`: the member id is the subject's last token. */
  serveAnswers(handle: AnswerHandler): void {
    if (this.answers) return;
    this.answers = this.nc.subscribe(this.subjects.allAnswers, {
      queue: QUEUE_GROUPS.council,
      callback: (err, msg) => {
        if (!err) void this.onAnswer(msg, handle);
      },
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    const sub = this.answers;
    this.answers = undefined;
    if (sub && !this.nc.isClosed()) await sub.drain().catch(() => undefined);
  }

  /**
   * One answer, through the service's request observers like every command (its metrics under
   * `v1.answers`, a SERVER span continuing the member's `traceparent`, its log context).
   */
  private async onAnswer(msg: Msg, handle: AnswerHandler): Promise<void> {
    const started = performance.now();
    // Read as every NATS edge reads a request (size first, UTF-8 JSON, an object); a refusal is
    // answered once the sender is known (audited in its name), an oversized body at once.
    let body: unknown;
    let unreadable: AcpError | undefined;
    try {
      body = readRequestBody(msg.data, this.config.maxPayloadBytes);
    } catch (err) {
      unreadable = err as AcpError;
    }
    const observed = { pattern: ANSWER_PATTERN, subject: msg.subject, headers: msg.headers, body };
    const answer = () => this.verdictOf(msg, body, unreadable, handle);
    let verdict: MemberVerdict;
    try {
      verdict = this.observer.around ? await this.observer.around(observed, answer) : await answer();
    } catch (err) {
      // verdictOf answers every failure itself: this is an observer's.
      this.logger.error(`answer on ${msg.subject} failed outside its handler: ${(err as Error)?.message}`);
      verdict = ANSWER_AGAIN;
    }
    // Only into an inbox: the reply subject is the sender's choice (see isReplyInbox).
    if (isReplyInbox(msg.reply) && !this.nc.isClosed()) msg.respond(encoder.encode(JSON.stringify(verdict)));
    try {
      this.observer.replied?.(observed, verdict, (performance.now() - started) / 1000);
    } catch (err) {
      this.logger.warn(`request observer failed: ${(err as Error)?.message}`);
    }
  }

  private async verdictOf(msg: Msg, body: unknown, unreadable: AcpError | undefined, handle: AnswerHandler): Promise<MemberVerdict> {
    // Not even parsed: nothing of it is worth authenticating or auditing.
    if (unreadable?.code === 'PAYLOAD_TOO_LARGE') return { ok: false, retry: false, error: unreadable.toJSON() };
    const memberId = msg.subject.split('.').pop() as string;
    const request: CommandRequest = { getSubject: () => msg.subject, getRawBody: () => msg.data, getHeaders: () => msg.headers };
    let identity: Identity | undefined;
    try {
      // The edge of the member API: an answer counts only from the member its subject names (a
      // signature by that member's key where authentication is required).
      identity = await this.context.authenticate(request, memberId);
      await this.context.actAs(identity, memberId, 'member_id');
      if (unreadable) throw unreadable;
      return await handle(memberId, body);
    } catch (err) {
      // An answer refused at the edge (not from the member it names) goes to the audit log like
      // any refused command; the run records its own refusals of the member's answers.
      if (err instanceof AcpError) await this.rejections.record('council.answers', request, body, err, identity);
      // Refused before anything was recorded or the nonce spent: the same answer, signed afresh after
      // the hint, is still good. Every other typed refusal is final for this answer.
      if (err instanceof RateLimitedError) return { ok: false, retry: true, error: err.toJSON() };
      if (err instanceof CouncilError || err instanceof AcpError) return { ok: false, retry: false, error: err.toJSON() };
      // Not the member's fault (the log is unavailable, the replica is stopping): answer again later.
      this.logger.warn(`answer from ${memberId} not handled: ${(err as Error).message}`);
      return ANSWER_AGAIN;
    }
  }
}

/**
 * The headers carrying the trace context of a task's open `council.task` span, through the
 * configured propagators (W3C by default), as for every NATS message the services send; undefined
 * with tracing off or no such span (the task settled meanwhile). A controller that resumes a run
 * opens spans for its open tasks before resending them (RunSpans.reconcile).
 */
function taskHeaders(taskId: string): MsgHdrs | undefined {
  if (!tracingOn()) return undefined;
  const ctx = taskTraceContext(taskId);
  if (!ctx) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  const keys = Object.keys(carrier);
  if (keys.length === 0) return undefined;
  const h = headers();
  for (const k of keys) h.set(k, carrier[k]);
  return h;
}
