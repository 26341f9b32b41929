import type { ServiceName } from '../support/conclave-harness';
import { expectNothingLost, faultSizes, faultTimeoutMs, runFaultScenario } from '../support/faults';

/**
 * SIGTERM under load, as a rolling deploy or a node drain sends it: each service in turn drains
 * (answers or abandons what it has, closes its consumers) and exits by itself within the grace
 * period, then a fresh process takes its place. Nothing in flight is lost: every `ok: true` an
 * agent got is in the log, every accepted proposal is decided once, every event audited.
 */
const ROTATION: ServiceName[] = ['intake', 'resolver', 'sweeper', 'audit', 'escalation'];
const sizes = faultSizes({ proposals: 300, kills: ROTATION.length });
/** Kubernetes' default terminationGracePeriodSeconds. */
const GRACE_MS = 30_000;

describe('SIGTERM of each service in turn under load: graceful drain, nothing in flight lost', () => {
  it(
    `given intake, resolver, sweeper, audit and escalation as processes, when ${sizes.kills} of them get SIGTERM in turn (${ROTATION.join(', ')}) during ${sizes.proposals} proposals and are replaced, then each exits by itself within the grace period, every ok reply is in the log and nothing is lost`,
    async () => {
      const forced: string[] = [];
      const result = await runFaultScenario({
        name: 'sigterm',
        services: ROTATION,
        sizes,
        fault: async ({ svc, index, record }) => {
          const name = ROTATION[index % ROTATION.length];
          const t0 = Date.now();
          const exit = await svc.kill(name, 'SIGTERM', GRACE_MS);
          record({ kill: true, note: `${name} drained and exited in ${Date.now() - t0} ms (code ${exit.code}, signal ${exit.signal})` });
          if (exit.forced) forced.push(`${name}: still running ${GRACE_MS} ms after SIGTERM`);
          await svc.restart(name);
          record({ restart: true, outageMs: Date.now() - t0 });
        },
      });

      expect(forced).toEqual([]);
      expect({ kills: result.kills, restarts: result.restarts }).toEqual({ kills: sizes.kills, restarts: sizes.kills });
      expectNothingLost(result);
    },
    faultTimeoutMs(sizes),
  );
});
