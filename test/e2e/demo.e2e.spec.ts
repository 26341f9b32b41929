import { runDemo } from '../../apps/cli/src/commands/demo.command';
import { ConclaveHarness } from '../support/conclave-harness';

/** What `npm run up` shows a newcomer: the four Appendix C scenarios, decided, through the SDK. */
describe('the demo of `npm run up` (Appendix C through the SDK, with a human for C.4)', () => {
  const h = new ConclaveHarness();
  beforeAll(() => h.start('intake', 'resolver', 'sweeper', 'escalation'));
  afterAll(() => h.stop());

  it('given the services, when the demo runs, then it prints each decision and returns once all four are final', async () => {
    const lines: string[] = [];
    const decisions = await runDemo(h.client, (line) => lines.push(line));
    const summary = decisions.map((d) => `${d.domain} ${d.outcome} ${d.trigger}`).sort();
    expect(summary).toEqual([
      'finance.budget approved timeout',
      'ops.deploy rejected quorum',
      'risk.credit approved quorum',
      'strategy.pricing approved manual',
      'strategy.pricing escalated quorum',
    ]);
    expect(lines.filter((l) => /^C\.\d/.test(l))).toHaveLength(5);
  });
});
