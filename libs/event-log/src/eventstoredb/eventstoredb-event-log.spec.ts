/** What the EventStoreDB adapter decides before or without a server (the contract needs one). */
import { ulid } from 'ulid';
import { EventLogConfigError, EventTooLargeError, InvalidAppendError, InvalidStreamNameError, LogUnavailableError } from '../core/errors';
import type { TestEvent } from '../testing/event-log.contract';
import { EventStoreDbEventLog } from './eventstoredb-event-log';

const ev = (pad = ''): TestEvent => ({ event_id: ulid(), type: 'E', data: { pad } });

describe('EventStoreDbEventLog without a server', () => {
  // Nothing listens on port 1: every call that reaches the network fails fast with UNAVAILABLE.
  const log = EventStoreDbEventLog.connect<TestEvent>('esdb://127.0.0.1:1?tls=false', { maxAppendBytes: 1024 });
  afterAll(() => log.close());

  it('rejects what it can check locally before any I/O', async () => {
    await expect(log.append('nodash', [ev()], 'any')).rejects.toBeInstanceOf(InvalidStreamNameError);
    await expect(log.append('proposal-A', [], 'any')).rejects.toBeInstanceOf(InvalidAppendError);
    await expect(log.append('proposal-A', [ev()], 'v7')).rejects.toBeInstanceOf(InvalidAppendError);
    const big = ev('x'.repeat(2048));
    const err = await log.append('proposal-A', [ev(), big], 'any').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EventTooLargeError);
    expect((err as EventTooLargeError).eventId).toBe(big.event_id);
  });

  it('maps an unreachable server to LogUnavailableError with the cause', async () => {
    const err = await log.append('proposal-A', [ev()], 'no_stream').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LogUnavailableError);
    expect((err as LogUnavailableError).cause).toBeDefined();
    await expect(log.read('proposal-A')).rejects.toBeInstanceOf(LogUnavailableError);
  }, 20_000);

  it('refuses invalid options', () => {
    expect(() => EventStoreDbEventLog.connect('not a url')).toThrow(EventLogConfigError);
    expect(() => EventStoreDbEventLog.connect('esdb://127.0.0.1:1?tls=false', { maxAppendBytes: 0 })).toThrow(EventLogConfigError);
  });
});
