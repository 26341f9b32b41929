import { InMemoryCheckpointStore } from './memory-checkpoint-store';
import { describeCheckpointStore, type Seen } from '../testing/checkpoint-store.contract';

describeCheckpointStore('InMemoryCheckpointStore', async () => ({
  store: new InMemoryCheckpointStore<Seen>(),
  dispose: async () => undefined,
}));
