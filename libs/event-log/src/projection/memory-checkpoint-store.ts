import { CheckpointConflictError } from '../core/errors';
import type { Checkpoint, CheckpointStore, LoadedCheckpoint } from './checkpoint-store';

/** Checkpoints in process memory: for tests, and projections that rebuild at every start. */
export class InMemoryCheckpointStore<S> implements CheckpointStore<S> {
  private readonly entries = new Map<string, LoadedCheckpoint<S>>();
  private revision = 0;

  async load(projection: string): Promise<LoadedCheckpoint<S> | undefined> {
    const e = this.entries.get(projection);
    // A copy, like a real store: the runner's later mutations must not rewrite the saved state.
    return e && { ...e, state: structuredClone(e.state) };
  }

  async save(projection: string, checkpoint: Checkpoint<S>, expectedRevision: number): Promise<number> {
    const current = this.entries.get(projection)?.revision ?? 0;
    if (current !== expectedRevision) throw new CheckpointConflictError(projection);
    const revision = ++this.revision;
    this.entries.set(projection, { position: checkpoint.position, state: structuredClone(checkpoint.state), revision });
    return revision;
  }

  async delete(projection: string): Promise<void> {
    this.entries.delete(projection);
  }
}
