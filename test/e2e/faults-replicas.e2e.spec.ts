import type { ServiceName } from '../support/conclave-harness';
import { expectNothingLost, FaultContext, faultSizes, faultTimeoutMs, runFaultScenario } from '../support/faults';
import type { ServiceProcesses } from '../support/processes';

/**
 * Two replicas of intake and of resolver as processes, one replica killed with SIGKILL mid-load
 * (intake, then resolver, alternating in the long run): the survivor carries the load alone until
 * the killed one is replaced at the next fault (or after the load). Nothing is decided twice or
 * lost, and the replaced replicas are ready.
 */
const SERVICES: ServiceName[] = ['intake', 'intake', 'resolver', 'resolver', 'sweeper', 'audit'];
const VICTIMS: ServiceName[] = ['intake', 'resolver'];
const sizes = faultSizes({ proposals: 400, kills: VICTIMS.length });

describe('two replicas of intake and resolver, one of each killed mid-load: the survivors carry on, nothing lost', () => {
  it(
    `given two intakes and two resolvers (and a sweeper and audit) as processes, when ${sizes.kills} replicas are killed with SIGKILL mid-load (${VICTIMS.join(', then ')}) during ${sizes.proposals} proposals, then every accepted proposal is decided once, every event audited and the replaced replicas are ready`,
    async () => {
      const replaceMissing = async (svc: ServiceProcesses, record: FaultContext['record']) => {
        for (const name of VICTIMS) {
          const missing = SERVICES.filter((n) => n === name).length - svc.live(name).length;
          for (let i = 0; i < missing; i++) {
            await svc.restart(name);
            record({ restart: true });
          }
        }
      };
      const result = await runFaultScenario({
        name: 'replicas',
        services: SERVICES,
        sizes,
        fault: async ({ svc, index, record }) => {
          await replaceMissing(svc, record);
          const name = VICTIMS[index % VICTIMS.length];
          await svc.kill(name, 'SIGKILL');
          record({ kill: true, note: `one ${name} replica killed; ${svc.live(name).length} left` });
        },
        afterLoad: replaceMissing,
      });

      expect({ kills: result.kills, restarts: result.restarts }).toEqual({ kills: sizes.kills, restarts: sizes.kills });
      expectNothingLost(result);
    },
    faultTimeoutMs(sizes),
  );
});
