import { Logger, Provider } from '@nestjs/common';
import { EventLog, EventStoreDbEventLog, JetStreamEventLog, KvCheckpointStore, LogEvent } from '@conclave/event-log';
import { NatsConnection } from 'nats';
import { CHECKPOINTS, EVENT_LOG, NATS_CONNECTION, SERVICE_CONFIG, SNAPSHOTS } from './tokens';
import { ObjectStoreSnapshots } from './snapshot-store';
import { ServiceConfig } from './service-config';

/** The event log the configuration names: EventStoreDB when EVENTSTORE_URL is set, else JetStream. */
export async function createEventLog(config: ServiceConfig, nc: NatsConnection): Promise<EventLog<LogEvent>> {
  if (config.eventStoreUrl) {
    return EventStoreDbEventLog.connect(config.eventStoreUrl);
  }
  return JetStreamEventLog.create({
    connection: nc,
    streamName: config.eventStream,
    subjectPrefix: config.eventSubjectPrefix,
    replicas: config.logReplicas,
    // Skipped, never folded; loud, because only a consumer aimed at the log's subjects puts one there.
    onForeignRecord: (record, reason) => new Logger('EventLog').warn(`skipped ${record}: ${reason}`),
  });
}

export const eventLogProviders: Provider[] = [
  {
    provide: EVENT_LOG,
    inject: [SERVICE_CONFIG, NATS_CONNECTION],
    useFactory: (config: ServiceConfig, nc: NatsConnection) => createEventLog(config, nc),
  },
  {
    // Checkpoints live in a JetStream KV bucket whichever log is used: NATS is always there.
    provide: CHECKPOINTS,
    inject: [SERVICE_CONFIG, NATS_CONNECTION],
    useFactory: (config: ServiceConfig, nc: NatsConnection) =>
      KvCheckpointStore.create({ connection: nc, bucket: `${config.eventStream}_CHECKPOINTS`, replicas: config.logReplicas }),
  },
  {
    // Reactors' snapshots: in a JetStream object store whichever log is used.
    provide: SNAPSHOTS,
    inject: [SERVICE_CONFIG, NATS_CONNECTION],
    useFactory: (config: ServiceConfig, nc: NatsConnection) =>
      ObjectStoreSnapshots.create(nc, `${config.eventStream}_SNAPSHOTS`, config.logReplicas),
  },
];
