/**
 * The contract against a real EventStoreDB: EVENTSTORE_URL when set, else a testcontainers
 * container when a container runtime is reachable, else every test reported as skipped by name.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describeEventLogContract, type TestEvent } from '../testing/event-log.contract';
import { EventStoreDbEventLog } from './eventstoredb-event-log';

const url = process.env.EVENTSTORE_URL;

/** Cheap, synchronous guess (Jest registers tests synchronously); a wrong guess fails loudly in beforeAll. */
function containerRuntimeLikely(): boolean {
  if (process.env.DOCKER_HOST) return true;
  const sockets = ['/var/run/docker.sock', join(homedir(), '.docker/run/docker.sock')];
  if (process.env.XDG_RUNTIME_DIR) sockets.push(join(process.env.XDG_RUNTIME_DIR, 'podman/podman.sock'));
  return sockets.some((s) => existsSync(s)) || existsSync(join(homedir(), '.testcontainers.properties'));
}

const skip = url || containerRuntimeLikely() ? undefined : 'no EVENTSTORE_URL and no container runtime';

describeEventLogContract(
  'EventStoreDB',
  async () => {
    let connection = url;
    let stopContainer: (() => Promise<unknown>) | undefined;
    if (!connection) {
      const { GenericContainer, Wait } = await import('testcontainers');
      const container = await new GenericContainer('eventstore/eventstore:24.10')
        .withEnvironment({ EVENTSTORE_INSECURE: 'true', EVENTSTORE_MEM_DB: 'true', EVENTSTORE_RUN_PROJECTIONS: 'None' })
        .withExposedPorts(2113)
        .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
        .start();
      connection = `esdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`;
      stopContainer = () => container.stop();
    }
    // Small enough for the size tests to stay quick, under the server's 1 MiB default.
    const log = EventStoreDbEventLog.connect<TestEvent>(connection, { maxAppendBytes: 256 * 1024 });
    const other = EventStoreDbEventLog.connect<TestEvent>(connection, { maxAppendBytes: 256 * 1024 });
    return {
      log,
      other,
      maxAppendBytes: log.maxAppendBytes,
      dispose: async () => {
        await Promise.all([log.close(), other.close()]);
        await stopContainer?.();
      },
    };
  },
  { skip, slowTimeoutMs: 120_000 },
);
