import type { StartFrom } from '../core/types';

/** A projection's state and the position of the last event folded into it, stored together. */
export interface Checkpoint<S> {
  readonly position: StartFrom;
  readonly state: S;
}

/** Stored checkpoint plus the store's own revision, for compare-and-set saves. */
export interface LoadedCheckpoint<S> extends Checkpoint<S> {
  readonly revision: number;
}

/**
 * Where a projection keeps its checkpoint. Saving writes position and state in one write, so
 * after a crash they always agree: the runner re-applies what came after, never twice.
 */
export interface CheckpointStore<S> {
  load(projection: string): Promise<LoadedCheckpoint<S> | undefined>;
  /**
   * Writes the checkpoint if the stored revision is still `expectedRevision` (0: none yet) and
   * returns the new revision.
   * @throws CheckpointConflictError when another runner of the same projection wrote meanwhile.
   */
  save(projection: string, checkpoint: Checkpoint<S>, expectedRevision: number): Promise<number>;
  /** Forgets the checkpoint (for a rebuild from zero). */
  delete(projection: string): Promise<void>;
}
