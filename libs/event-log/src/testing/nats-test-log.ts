import { connect, type NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { JetStreamEventLog, type JetStreamEventLogOptions } from '../jetstream/jetstream-event-log';
import type { TestEvent } from './event-log.contract';

export const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';

/** A JetStream log under its own stream and subject prefix (a ULID), deleted by `dispose`. */
export async function openTestLog(
  overrides: Partial<Omit<JetStreamEventLogOptions, 'connection' | 'streamName' | 'subjectPrefix'>> = {},
): Promise<{
  log: JetStreamEventLog<TestEvent>;
  other: JetStreamEventLog<TestEvent>;
  connections: NatsConnection[];
  dispose(): Promise<void>;
}> {
  const id = ulid();
  const options = {
    streamName: `TEST_${id}_EVENTS`,
    subjectPrefix: `test_${id.toLowerCase()}`,
    maxAppendBytes: 256 * 1024,
    duplicateWindowMs: 60_000,
    ...overrides,
  };
  const a = await connect({ servers: NATS_URL, name: 'event-log test A' });
  const b = await connect({ servers: NATS_URL, name: 'event-log test B' });
  const log = await JetStreamEventLog.create<TestEvent>({ ...options, connection: a });
  const other = await JetStreamEventLog.create<TestEvent>({ ...options, connection: b });
  return {
    log,
    other,
    connections: [a, b],
    dispose: async () => {
      await other.close();
      await log.close();
      await log.deleteStream().catch(() => undefined);
      await Promise.all([a.close(), b.close()]);
    },
  };
}
