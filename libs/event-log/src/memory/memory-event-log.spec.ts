import { describeEventLogContract, type TestEvent } from '../testing/event-log.contract';
import { InMemoryEventLog } from './memory-event-log';

describeEventLogContract('in-memory', async () => {
  const log = new InMemoryEventLog<TestEvent>({ maxAppendBytes: 64 * 1024 });
  return { log, other: log, maxAppendBytes: log.maxAppendBytes, dispose: () => log.close() };
});

describeEventLogContract('in-memory, one commit per append (as JetStream stores it)', async () => {
  const log = new InMemoryEventLog<TestEvent>({ maxAppendBytes: 64 * 1024, commits: 'append' });
  return { log, other: log, maxAppendBytes: log.maxAppendBytes, dispose: () => log.close() };
});
