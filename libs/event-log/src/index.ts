// Public surface of @conclave/event-log. The contract suite (testing/) is imported by spec files
// directly: it needs Jest globals.
export type {
  AppendOptions,
  AppendResult,
  CategoryFilter,
  EventHandler,
  EventLog,
  EventMetadata,
  ExpectedVersion,
  LogEvent,
  Position,
  ReadResult,
  StartFrom,
  StoredEvent,
  StreamVersion,
  Subscription,
} from './core/types';
export { comparePositions, isAtOrBefore } from './core/types';
export {
  CheckpointConflictError,
  ConcurrencyError,
  CorruptRecordError,
  EventLogConfigError,
  EventTooLargeError,
  InvalidAppendError,
  InvalidStreamNameError,
  LogUnavailableError,
  isEventLogError,
  type EventLogError,
  type EventLogErrorCode,
} from './core/errors';
export { categoryOf, parseStreamName, streamName, type StreamName } from './core/stream-name';
export { InMemoryEventLog, type InMemoryEventLogOptions } from './memory/memory-event-log';
export { JetStreamEventLog, type JetStreamEventLogOptions } from './jetstream/jetstream-event-log';
export { KvCheckpointStore, type KvCheckpointStoreOptions } from './jetstream/kv-checkpoint-store';
export { isCreateRace, openRacingCreate } from './jetstream/create-race';
export { scanOrdered, ScanIncompleteError } from './jetstream/ordered-scan';
export { EventStoreDbEventLog, type EventStoreDbEventLogOptions } from './eventstoredb/eventstoredb-event-log';
export { eventIdToUuid } from './eventstoredb/event-id-uuid';
export type { Checkpoint, CheckpointStore, LoadedCheckpoint } from './projection/checkpoint-store';
export { InMemoryCheckpointStore } from './projection/memory-checkpoint-store';
export { AggregateCache, type AggregateCacheOptions, type AggregateCacheStats, type LoadedAggregate } from './cache/aggregate-cache';
export { type LoadOptions } from './cache/aggregate-cache';
export {
  CommandConflictError,
  handleCommand,
  type AggregateSource,
  type CommandOutcome,
  type Decider,
  type HandleCommandOptions,
} from './command/handle-command';
