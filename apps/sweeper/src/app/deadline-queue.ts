/**
 * Pending proposals' expiry deadlines in a binary min-heap of parallel arrays (epoch ms and
 * proposal id), with lazy deletion: a proposal that leaves PENDING is dropped from the live
 * set and its heap slot is skipped when it reaches the top. About 100 bytes per pending
 * proposal (measured by `npm run bench`), so a million fit in ~100 MiB.
 */
export class DeadlineQueue {
  private readonly at: number[] = [];
  private readonly ids: string[] = [];
  /** Live deadlines by proposal id; a heap entry whose deadline differs is stale. */
  private readonly live = new Map<string, number>();

  get size(): number {
    return this.live.size;
  }

  schedule(id: string, deadlineMs: number): void {
    this.live.set(id, deadlineMs);
    this.at.push(deadlineMs);
    this.ids.push(id);
    this.up(this.at.length - 1);
  }

  cancel(id: string): void {
    this.live.delete(id);
  }

  /** The earliest live deadline, or undefined. */
  peek(): number | undefined {
    this.dropStale();
    return this.at.length > 0 ? this.at[0] : undefined;
  }

  /** Removes and returns every id whose deadline is at or before `nowMs`. */
  takeDue(nowMs: number): string[] {
    const due: string[] = [];
    for (;;) {
      this.dropStale();
      if (this.at.length === 0 || this.at[0] > nowMs) return due;
      const id = this.ids[0];
      this.pop();
      this.live.delete(id);
      due.push(id);
    }
  }

  /** Every live id whose deadline is at or before `nowMs`, without removing (the full sweep). */
  overdue(nowMs: number): string[] {
    return [...this.live].filter(([, at]) => at <= nowMs).map(([id]) => id);
  }

  private dropStale(): void {
    while (this.at.length > 0 && this.live.get(this.ids[0]) !== this.at[0]) this.pop();
  }

  private pop(): void {
    const last = this.at.length - 1;
    this.swap(0, last);
    this.at.pop();
    this.ids.pop();
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
    [this.ids[a], this.ids[b]] = [this.ids[b], this.ids[a]];
  }
}
