/**
 * Runs async tasks concurrently across keys and in order within a key, with at most `capacity`
 * tasks in flight. A subscription handler that awaits `submit` gets back-pressure when the
 * queue is full, while work on different proposals overlaps instead of queueing behind one
 * another's round trips to the log.
 */
export class KeyedWorkQueue {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly waiting: Array<() => void> = [];
  private inFlight = 0;
  private idle: Promise<void> = Promise.resolve();
  private settleIdle: (() => void) | undefined;

  constructor(
    private readonly capacity: number,
    private readonly onError: (key: string, err: unknown) => void,
  ) {}

  /** Resolves once the task is accepted (not when it is done). */
  async submit(key: string, task: () => Promise<void>): Promise<void> {
    while (this.inFlight >= this.capacity) await new Promise<void>((r) => this.waiting.push(r));
    if (this.inFlight++ === 0) this.idle = new Promise((r) => (this.settleIdle = r));
    const previous = this.tails.get(key) ?? Promise.resolve();
    const run = previous
      .then(task)
      .catch((err: unknown) => this.onError(key, err))
      .finally(() => {
        if (this.tails.get(key) === run) this.tails.delete(key);
        this.inFlight--;
        this.waiting.shift()?.();
        if (this.inFlight === 0) this.settleIdle?.();
      });
    this.tails.set(key, run);
  }

  /** Resolves when every accepted task has finished. */
  drain(): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : this.idle;
  }
}
