import { acpStreamNames, councilSubjects, ensureStream } from '@conclave/messaging';
import type { CouncilDecisionMessage } from '@conclave/sdk';
import { cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';
import { sampleValue } from '../support/metrics-text';
import { eventually } from '../support/conclave-harness';

/**
 * The council's decision outbox when JetStream refuses its publish: the decision stream is gone
 * when the run ends. Nothing is lost: the outbox resumes from its checkpoint until the stream is
 * back, then the decision is published once, and /metrics says so.
 */
describe('council decision outbox: a refused publish is retried, never dropped', () => {
  const c = new CouncilHarness();

  beforeAll(() => c.start());
  afterAll(() => c.stop());

  const metrics = async () => (await fetch(`${await c.h.instances[0].app.getUrl()}/metrics`)).text();

  it('given the decision stream deleted, when a run ends, then its decision is published once the stream is back', async () => {
    const jsm = await c.h.nc.jetstreamManager();
    const stream = acpStreamNames(c.h.run).councilDecisions;
    const subject = councilSubjects(c.prefix).decisions;
    await jsm.streams.delete(stream);

    const proposers = ['o-builder', 'o-skeptic', 'o-operator'];
    c.join(Object.fromEntries([...proposers, 'o-chair'].map((id) => [id, cleanBehaviour()])));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair: 'o-chair' }),
      policy: { stage_timeout_ms: 3_000 },
    });
    const ended = await eventually(async () => (await c.client.get(runId, 'human-owner')).terminal ?? undefined, 30_000, 'the run ended');
    expect(ended.terminal_state).toMatch(/^decided/);
    // The publish was refused (no stream takes the subject) and the outbox went back to its checkpoint.
    await eventually(
      async () =>
        sampleValue(await metrics(), /^conclave_outbox_restarts_total\{outbox="council-outbox",service="council"\}/) >= 1
          ? true
          : undefined,
      10_000,
      'the outbox restarted',
    );

    await ensureStream(jsm, { name: stream, subjects: [subject] });
    const consumer = await c.h.nc.jetstream().consumers.get(stream);
    const received: CouncilDecisionMessage[] = [];
    const messages = await consumer.consume();
    void (async () => {
      for await (const m of messages) received.push(m.json<CouncilDecisionMessage>());
    })();
    try {
      const decision = await eventually(async () => received.find((d) => d.run_id === runId), 15_000, 'the decision published');
      expect(decision).toMatchObject({ run_id: runId, terminal_state: ended.terminal_state, goal_contract_id: 'gc-001' });
      // Published once: Nats-Msg-Id is the event id, and the checkpoint moved past it.
      await eventually(
        async () =>
          sampleValue(await metrics(), /^conclave_outbox_pending_messages\{outbox="council-outbox",service="council"\}/) === 0
            ? true
            : undefined,
        5_000,
        'nothing pending',
      );
      const info = await jsm.streams.info(stream);
      expect(info.state.messages).toBe(received.length);
      expect(received.filter((d) => d.run_id === runId)).toHaveLength(1);
      expect(
        sampleValue(await metrics(), /^conclave_outbox_published_messages_total\{outbox="council-outbox",service="council"\}/),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      messages.stop();
    }
  });
});
