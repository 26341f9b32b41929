import { CouncilMember, CouncilMemberOptions, CouncilTask, CouncilVerdict } from '@conclave/sdk';
import type { Usage } from '@conclave/council-protocol';
import type { NatsConnection } from 'nats';

/** What an agent answers to a task: the artifact, or why it cannot do it. */
export interface CouncilAnswer {
  artifact?: unknown;
  usage?: Usage;
  error?: { code: string; message: string };
}

interface Held {
  task: CouncilTask;
  answer: (a: CouncilAnswer) => void;
  fail: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** A refusal of a submit_council_answer, with a stable code. */
export class CouncilDeskError extends Error {
  constructor(
    readonly code: 'UNKNOWN_TASK' | 'TASK_ALREADY_ANSWERED',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Turns the SDK's push-style CouncilMember (the controller sends a task, the member answers it)
 * into the pull-style pair an MCP client can drive: `next()` hands out the next task received,
 * `submit()` answers it and returns the controller's verdict. A refused answer comes back from
 * `next()` with its `refusal`, as the SDK retries it. Tasks not answered by their deadline are
 * given up (the controller has moved on).
 */
export class CouncilDesk {
  private member: CouncilMember | undefined;
  private readonly queue: CouncilTask[] = [];
  private readonly waiting: Array<(t: CouncilTask | undefined) => void> = [];
  private readonly held = new Map<string, Held>();
  private readonly verdicts = new Map<string, (v: CouncilVerdict) => void>();

  constructor(
    private readonly nc: NatsConnection,
    readonly memberId: string,
    private readonly prefix?: string,
    /** Signs answers as the member where the service requires authentication. */
    private readonly signer?: CouncilMemberOptions['signer'],
  ) {}

  /** Subscribes to the member's task subject (idempotent). */
  start(): void {
    if (this.member) return;
    const handler = (task: CouncilTask, ctx: { reportUsage(u: Usage): void }) =>
      new Promise<unknown>((resolve, reject) => {
        const wait = Math.max(Date.parse(task.deadline) - Date.now(), 0);
        const timer = setTimeout(() => this.drop(task.task_id, new Error('the task deadline passed')), wait);
        this.held.set(task.task_id, {
          task,
          timer,
          fail: reject,
          answer: (a) => {
            if (a.usage) ctx.reportUsage(a.usage);
            if (a.error) reject(Object.assign(new Error(a.error.message), { code: a.error.code }));
            else resolve(a.artifact);
          },
        });
        this.offer(task);
      });
    const member = new CouncilMember({
      nc: this.nc,
      memberId: this.memberId,
      prefix: this.prefix,
      signer: this.signer,
      onVerdict: (task, verdict) => {
        this.verdicts.get(task.task_id)?.(verdict);
        this.verdicts.delete(task.task_id);
      },
    });
    for (const stage of ['proposal', 'review', 'revision', 'conflict-map', 'frame-check', 'synthesis'] as const) member.on(stage, handler);
    this.member = member.start();
  }

  /** The next task received, waiting up to `timeoutMs`; undefined when none came. */
  next(timeoutMs: number): Promise<CouncilTask | undefined> {
    this.start();
    const ready = this.queue.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const take = (t: CouncilTask | undefined) => {
        clearTimeout(timer);
        resolve(t);
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(take), 1);
        resolve(undefined);
      }, timeoutMs);
      this.waiting.push(take);
    });
  }

  /** Answers a task handed out by `next()`; resolves with the controller's verdict (undefined if none came). */
  async submit(taskId: string, answer: CouncilAnswer): Promise<CouncilVerdict | undefined> {
    const held = this.held.get(taskId);
    if (!held)
      throw new CouncilDeskError('UNKNOWN_TASK', `no open task ${taskId} for ${this.memberId} (already answered, or past its deadline)`);
    this.held.delete(taskId);
    clearTimeout(held.timer);
    const queued = this.queue.indexOf(held.task);
    if (queued >= 0) this.queue.splice(queued, 1);
    const verdict = new Promise<CouncilVerdict | undefined>((resolve) => {
      const wait = Math.max(Date.parse(held.task.deadline) - Date.now(), 0) + 2_000;
      const timer = setTimeout(() => {
        this.verdicts.delete(taskId);
        resolve(undefined);
      }, wait);
      this.verdicts.set(taskId, (v) => {
        clearTimeout(timer);
        resolve(v);
      });
    });
    held.answer(answer);
    // An error answer gets no verdict worth waiting for: the controller records the failure.
    return answer.error ? undefined : verdict;
  }

  async stop(): Promise<void> {
    for (const id of [...this.held.keys()]) this.drop(id, new Error('the MCP server is stopping'));
    for (const w of this.waiting.splice(0)) w(undefined);
    await this.member?.stop();
    this.member = undefined;
  }

  private offer(task: CouncilTask): void {
    const take = this.waiting.shift();
    if (take) take(task);
    else this.queue.push(task);
  }

  private drop(taskId: string, reason: Error): void {
    const held = this.held.get(taskId);
    if (!held) return;
    this.held.delete(taskId);
    clearTimeout(held.timer);
    const queued = this.queue.indexOf(held.task);
    if (queued >= 0) this.queue.splice(queued, 1);
    held.fail(reason);
  }
}
