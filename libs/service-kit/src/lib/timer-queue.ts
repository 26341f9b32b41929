import { SpanKind, type Context } from '@opentelemetry/api';
import type { Clock } from './runtime';
import { activeTraceContext, continueTrace } from './tracing';

/** What a timer's action reports: done (forget the item) or retry (later, with backoff). */
export type TimerOutcome = 'done' | 'retry';

export interface TimerQueueOptions {
  readonly clock: Clock;
  /** The action at the item's time. A throw counts as `'retry'`. */
  readonly run: (key: string) => Promise<TimerOutcome>;
  /** Told of each failed attempt (a log line, a metric). */
  readonly onRetry?: (key: string, attempt: number, err: unknown) => void;
  /** Actions running at once. Default 16. */
  readonly parallel?: number;
  /** First retry after this long, doubling up to `maxBackoffMs`. Default 100 ms and 2 s: a decision waits no longer than that once the log is back. */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Re-arm at least this often, so a wall-clock jump never leaves the queue asleep. Default 60 s. */
  readonly maxSleepMs?: number;
  /** Names the span of each action when tracing is on (`timer <name>`). Default `queue`. */
  readonly name?: string;
}

/**
 * The one timer mechanism of the services (expiry deadlines, escalation ladder steps, retried
 * reactions): a min-heap of due times with one Node timer set for the earliest. An item stays
 * until its action reports `'done'` or it is cancelled; a failed action (a refused append, a log
 * outage) is retried with exponential backoff, never dropped. About 100 bytes per item.
 */
export class TimerQueue {
  private readonly at: number[] = [];
  private readonly keys: string[] = [];
  private readonly tokens: number[] = [];
  /**
   * Live items: due time and the token of their heap slot (older slots are stale), and with
   * tracing on the trace context it was scheduled in, which its action continues.
   */
  private readonly live = new Map<string, { at: number; token: number; attempts: number; trace?: Context }>();
  private readonly running = new Set<string>();
  private nextToken = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor: number | undefined;
  private started = false;
  private draining: Promise<void> = Promise.resolve();
  private readonly parallel: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxSleepMs: number;

  constructor(private readonly options: TimerQueueOptions) {
    this.parallel = options.parallel ?? 16;
    this.backoffMs = options.backoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 2_000;
    this.maxSleepMs = options.maxSleepMs ?? 60_000;
  }

  /** Items waiting or being retried. */
  get size(): number {
    return this.live.size;
  }

  has(key: string): boolean {
    return this.live.has(key);
  }

  /** Items whose time has come (due now, or failing and waiting for a retry). */
  dueCount(nowMs = this.options.clock.now().getTime()): number {
    let n = 0;
    for (const item of this.live.values()) if (item.at <= nowMs) n++;
    return n;
  }

  /** Every item and its time (for a snapshot). */
  entries(): [string, number][] {
    return [...this.live].map(([key, item]) => [key, item.at]);
  }

  /** Sets (or moves) the item's time. */
  schedule(key: string, atMs: number): void {
    this.put(key, atMs, 0, activeTraceContext() ?? this.live.get(key)?.trace);
    this.arm();
  }

  cancel(key: string): void {
    this.live.delete(key);
  }

  /** Starts the timer: items scheduled before wait until then (a reactor's catch-up). */
  start(): void {
    this.started = true;
    this.arm();
  }

  /** Stops the timer and waits for running actions. */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
    await this.draining;
  }

  private put(key: string, atMs: number, attempts: number, trace: Context | undefined): void {
    const token = this.nextToken++;
    this.live.set(key, trace ? { at: atMs, token, attempts, trace } : { at: atMs, token, attempts });
    this.at.push(atMs);
    this.keys.push(key);
    this.tokens.push(token);
    this.up(this.at.length - 1);
  }

  private arm(): void {
    if (!this.started) return;
    this.dropStale();
    if (this.at.length === 0) return;
    const next = this.at[0];
    if (next === this.armedFor) return;
    clearTimeout(this.timer);
    this.armedFor = next;
    const delay = Math.min(Math.max(0, next - this.options.clock.now().getTime()), this.maxSleepMs);
    this.timer = setTimeout(() => {
      this.armedFor = undefined;
      this.draining = this.fire();
    }, delay);
  }

  private async fire(): Promise<void> {
    const now = this.options.clock.now().getTime();
    const due: { key: string; token: number }[] = [];
    for (;;) {
      this.dropStale();
      if (this.at.length === 0 || this.at[0] > now) break;
      const key = this.keys[0];
      const token = this.tokens[0];
      this.pop();
      // A key whose previous action still runs waits for it (one action per key at a time).
      if (this.running.has(key)) {
        const item = this.live.get(key);
        if (item) this.put(key, now + this.backoffMs, item.attempts, item.trace);
        continue;
      }
      due.push({ key, token });
    }
    for (let i = 0; i < due.length && this.started; i += this.parallel) {
      await Promise.all(due.slice(i, i + this.parallel).map((d) => this.runOne(d.key, d.token)));
    }
    this.arm();
  }

  private async runOne(key: string, token: number): Promise<void> {
    // Cancelled or moved while it waited for its batch.
    if (this.live.get(key)?.token !== token) return;
    this.running.add(key);
    let outcome: TimerOutcome;
    let error: unknown;
    try {
      const trace = this.live.get(key)?.trace;
      outcome = trace
        ? await continueTrace(trace, `timer ${this.options.name ?? 'queue'}`, SpanKind.INTERNAL, { 'conclave.timer_key': key }, () =>
            this.options.run(key),
          )
        : await this.options.run(key);
    } catch (err) {
      outcome = 'retry';
      error = err;
    } finally {
      this.running.delete(key);
    }
    const item = this.live.get(key);
    // Cancelled, or scheduled anew while running: the newer word stands.
    if (!item || item.token !== token) return;
    if (outcome === 'done') {
      this.live.delete(key);
      return;
    }
    const attempts = item.attempts + 1;
    this.options.onRetry?.(key, attempts, error);
    const delay = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** Math.min(attempts - 1, 20));
    this.put(key, this.options.clock.now().getTime() + delay, attempts, item.trace);
  }

  private dropStale(): void {
    while (this.at.length > 0 && this.live.get(this.keys[0])?.token !== this.tokens[0]) this.pop();
  }

  private pop(): void {
    const last = this.at.length - 1;
    this.swap(0, last);
    this.at.pop();
    this.keys.pop();
    this.tokens.pop();
    this.down(0);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.at[parent] <= this.at[i]) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.at.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.at[l] < this.at[m]) m = l;
      if (r < n && this.at[r] < this.at[m]) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    [this.at[a], this.at[b]] = [this.at[b], this.at[a]];
    [this.keys[a], this.keys[b]] = [this.keys[b], this.keys[a]];
    [this.tokens[a], this.tokens[b]] = [this.tokens[b], this.tokens[a]];
  }
}
