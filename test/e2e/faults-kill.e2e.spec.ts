import type { ServiceName } from '../support/conclave-harness';
import { expectNothingLost, faultSizes, faultTimeoutMs, runFaultScenario, sleep } from '../support/faults';

/**
 * `kill -9` of each service in turn under load, each restarted as a fresh process with the same
 * env (as Kubernetes restarts a crashed pod). Agents retry what went unanswered; an identical
 * retry is answered as the first attempt was (or refused as a duplicate once it is in the log).
 * Afterwards every accepted proposal is decided exactly once, every tie routed, every event
 * audited, the invariant checker is clean and every restarted service is ready.
 */
const ROTATION: ServiceName[] = ['intake', 'resolver', 'sweeper', 'audit', 'escalation'];
const sizes = faultSizes({ proposals: 300, kills: ROTATION.length });
/** How long the orchestrator takes to notice the crash before it starts the new process. */
const RESTART_DELAY_MS = 300;

describe('kill -9 of each service in turn under load, restarted like a pod: nothing lost', () => {
  it(
    `given intake, resolver, sweeper, audit and escalation as processes, when ${sizes.kills} of them are killed with SIGKILL in turn (${ROTATION.join(', ')}) during ${sizes.proposals} proposals and restarted, then every accepted proposal is decided once, every event audited and every service ready`,
    async () => {
      const exits: string[] = [];
      const result = await runFaultScenario({
        name: 'kill-9',
        services: ROTATION,
        sizes,
        fault: async ({ svc, index, record }) => {
          const name = ROTATION[index % ROTATION.length];
          const t0 = Date.now();
          const { signal } = await svc.kill(name, 'SIGKILL');
          record({ kill: true });
          if (signal !== 'SIGKILL') exits.push(`${name}: ended by ${signal}`);
          await sleep(RESTART_DELAY_MS); // models the orchestrator's reaction, not a wait for a result
          await svc.restart(name);
          record({ restart: true, outageMs: Date.now() - t0, note: `${name} killed and ready again in ${Date.now() - t0} ms` });
        },
      });

      expect(exits).toEqual([]);
      expect({ kills: result.kills, restarts: result.restarts }).toEqual({ kills: sizes.kills, restarts: sizes.kills });
      expectNothingLost(result);
    },
    faultTimeoutMs(sizes),
  );
});
