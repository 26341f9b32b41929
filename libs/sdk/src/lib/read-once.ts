/**
 * Which stream sequences a reader of one consumer has already read, so that a redelivery is read
 * only if it was never read before. JetStream redelivers what it holds unacknowledged after the
 * ack wait: a copy of an event the reader is still busy with (a body slower than the ack wait), a
 * copy whose acknowledgement was lost, and a delivery lost in transit (a server restart) that the
 * reader never had. The last comes after newer events, so a high-water mark would drop it for
 * ever; the set of sequences read does not.
 *
 * The set is kept small by the server's ack floor: every sequence at or below it is acknowledged,
 * so no copy of it is to be read again, and its entries can go. Pure: the caller asks the server.
 */
export class ReadOnce {
  private readonly read = new Set<number>();
  private floor = 0;

  /** True when the message at `seq` is to be read: above the ack floor and not read before. */
  isNew(seq: number): boolean {
    return seq > this.floor && !this.read.has(seq);
  }

  markRead(seq: number): void {
    if (seq > this.floor) this.read.add(seq);
  }

  /** The consumer's ack floor (its stream sequence), as the server last said it. */
  acknowledgedThrough(floor: number): void {
    if (floor <= this.floor) return;
    this.floor = floor;
    for (const seq of this.read) if (seq <= floor) this.read.delete(seq);
  }

  /** Sequences held: those read above the ack floor. */
  get size(): number {
    return this.read.size;
  }
}
