/**
 * The checkpoint store contract: run unchanged against each CheckpointStore (a position and a
 * state saved together, compare-and-set on the store's revision). Uses Jest globals; imported by
 * spec files only.
 */
import { CheckpointConflictError } from '../core/errors';
import type { CheckpointStore } from '../projection/checkpoint-store';

export interface Seen {
  ids: string[];
}

export function describeCheckpointStore(
  name: string,
  open: () => Promise<{ store: CheckpointStore<Seen>; dispose(): Promise<void> }>,
): void {
  describe(`checkpoint store contract: ${name}`, () => {
    let store: CheckpointStore<Seen>;
    let dispose: () => Promise<void>;
    beforeEach(async () => {
      ({ store, dispose } = await open());
    });
    afterEach(async () => {
      await dispose();
    });

    it('given nothing saved, then load finds nothing; given a save, then load returns the same position and state with its revision', async () => {
      expect(await store.load('seen')).toBeUndefined();
      const revision = await store.save('seen', { position: '00000000000000000007', state: { ids: ['a', 'b'] } }, 0);
      expect(revision).toBeGreaterThan(0);
      expect(await store.load('seen')).toEqual({ position: '00000000000000000007', state: { ids: ['a', 'b'] }, revision });
    });

    it('given a save on the current revision, then it replaces the checkpoint and returns a newer revision', async () => {
      const r1 = await store.save('seen', { position: '00000000000000000001', state: { ids: ['a'] } }, 0);
      const r2 = await store.save('seen', { position: '00000000000000000002', state: { ids: ['a', 'b'] } }, r1);
      expect(r2).toBeGreaterThan(r1);
      expect((await store.load('seen'))?.state.ids).toEqual(['a', 'b']);
    });

    it('given another writer saved meanwhile, when a save expects the older revision, then CheckpointConflictError and nothing changes', async () => {
      const r1 = await store.save('seen', { position: '00000000000000000001', state: { ids: ['a'] } }, 0);
      await store.save('seen', { position: '00000000000000000002', state: { ids: ['a', 'b'] } }, r1);
      await expect(store.save('seen', { position: '00000000000000000003', state: { ids: ['x'] } }, r1)).rejects.toBeInstanceOf(
        CheckpointConflictError,
      );
      await expect(store.save('seen', { position: '00000000000000000003', state: { ids: ['x'] } }, 0)).rejects.toBeInstanceOf(
        CheckpointConflictError,
      );
      expect((await store.load('seen'))?.state.ids).toEqual(['a', 'b']);
    });

    it('given a deleted checkpoint, then load finds nothing and a save from revision 0 starts again', async () => {
      await store.save('seen', { position: '00000000000000000001', state: { ids: ['a'] } }, 0);
      await store.delete('seen');
      expect(await store.load('seen')).toBeUndefined();
      await store.save('seen', { position: 'start', state: { ids: [] } }, 0);
      expect((await store.load('seen'))?.position).toBe('start');
    });
  });
}
