import { describeEventLogContract } from '../testing/event-log.contract';
import { openTestLog } from '../testing/nats-test-log';

describeEventLogContract('NATS JetStream', async () => {
  const t = await openTestLog();
  return { log: t.log, other: t.other, maxAppendBytes: t.log.maxAppendBytes, dispose: t.dispose };
});
