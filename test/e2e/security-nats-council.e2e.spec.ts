import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, headers, JetStreamManager, NatsConnection } from 'nats';
import type { MemberDescriptor, RunRecord } from '@conclave/council-protocol';
import { acpStreamNames, ensureMemberTaskConsumer, memberTaskConsumerConfig } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { CouncilClient, ed25519Signer, generateParticipantKeys, ParticipantKeyPair } from '@conclave/sdk';
import { cleanBehaviour, ScriptedMember, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { eventually } from '../support/conclave-harness';
import { AccountsDeployment, accountsWithAgents } from '../support/accounts-nats';
import { OperatorDeployment } from '../support/operator-nats';

const TASKS = acpStreamNames().councilTasks;
const encode = (x: unknown) => new TextEncoder().encode(typeof x === 'string' ? x : JSON.stringify(x));

/** Alice proposes; bob proposes and chairs: two members, each its own NATS user. */
function panelOfTwo(): MemberDescriptor[] {
  const [alice, bob] = scriptedPanel({ proposers: ['alice', 'bob'] });
  return [alice, { ...bob, council_roles: ['proposer', 'reviewer', 'reviser', 'chair'] }];
}

/**
 * Council members under NATS accounts (deploy/nats/nats-accounts.conf on a private nats-server,
 * the council service as the services' user, authentication required): each member works its own
 * durable task queue (consumer `member-<id>` on COUNCIL_TASKS, made by the council service before
 * the member's first task; members create no consumer) and answers on its own subject with
 * the rights of its own entry, and the server refuses mallory, another agent, every way into
 * alice's queue and alice's answer subject.
 */
describe.each([
  ['NATS accounts (users and passwords)', AccountsDeployment],
  ['NATS operator mode (the same accounts as JWTs, a creds file per user)', OperatorDeployment],
])('security: council members under %s', (_mode, Deployment) => {
  const deployment = new Deployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-council-')),
    accountsWithAgents(['alice', 'bob', 'mallory']),
    generateParticipantKeys(),
  );
  const keys = new Map<string, ParticipantKeyPair>();
  const members: ScriptedMember[] = [];

  /** A NATS connection as the agent's own user and inbox prefix (`agent` is the template entry itself). */
  const natsAs = (user: string): Promise<NatsConnection> => deployment.connectAs(user);
  const signer = (id: string) => ed25519Signer(id, keys.get(id)!.privateKeyPem);
  const refusedByServer = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });

  beforeAll(async () => {
    await deployment.start();
    await deployment.startService('council');
    for (const id of ['owner', 'alice', 'bob', 'mallory']) {
      const pair = generateParticipantKeys();
      keys.set(id, pair);
      await deployment.admin.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['agent'], public_key: pair.publicKey });
    }
    await deployment.admin.call(REGISTRY_PATTERNS.grant, {
      participant_id: 'owner',
      domain: 'general',
      domain_authority: 0.9,
      trust_score: 0.9,
    });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await deployment.stop();
  });

  it("given a run whose two members each connect as their own NATS user (started before their queues exist; the council service makes them), when mallory (another agent) tries alice's consumer, her tasks, an unfiltered consumer and her answer subject, then the server refuses each, nothing reaches the run, and the run decides on the members' signed answers", async () => {
    // Given: alice and bob working the run through CouncilMember, each with its own user and key;
    // alice holds her review until the attacks are over, so her queue is busy while attacked.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const alice = new ScriptedMember(
      await natsAs('alice'),
      'alice',
      cleanBehaviour({ hold: (t) => (t.stage === 'review' ? gate : undefined) }),
      undefined,
      signer('alice'),
    ).start();
    const bob = new ScriptedMember(await natsAs('bob'), 'bob', cleanBehaviour(), undefined, signer('bob')).start();
    members.push(alice, bob);
    // The owner starts the run over the template entry's own user.
    const owner = new CouncilClient(await natsAs('agent'), undefined, { signer: signer('owner') });
    const runId = await owner.start({
      goal_contract: scriptedGoalContract({ decision_owner: 'owner' }),
      panel: panelOfTwo(),
      policy: { stage_timeout_ms: 30_000 },
    });
    await alice.until(() => alice.tasks.some((t) => t.stage === 'review'), 20_000, "alice's review task");

    // When: mallory, with her own user, goes after alice's queue and answers.
    const mallory = await natsAs('mallory');
    const jsm: JetStreamManager = await mallory.jetstreamManager();
    await refusedByServer(jsm.consumers.info(TASKS, 'member-alice'));
    await refusedByServer(jsm.consumers.add(TASKS, memberTaskConsumerConfig('council', 'alice')));
    await refusedByServer(mallory.jetstream().consumers.get(TASKS, 'member-alice'));
    await refusedByServer(
      mallory.request(`$JS.API.CONSUMER.MSG.NEXT.${TASKS}.member-alice`, encode({ batch: 1, expires: 1e9 }), { timeout: 5_000 }),
    );
    // Ad-hoc consumers reading all of COUNCIL_TASKS: ephemeral, durable without a filter, ordered.
    await refusedByServer(jsm.consumers.add(TASKS, { ack_policy: AckPolicy.Explicit }));
    await refusedByServer(jsm.consumers.add(TASKS, { durable_name: 'member-mallory', ack_policy: AckPolicy.Explicit }));
    await refusedByServer(
      mallory.request(
        `$JS.API.CONSUMER.DURABLE.CREATE.${TASKS}.member-mallory`,
        encode({ stream_name: TASKS, config: { durable_name: 'member-mallory' } }),
        {
          timeout: 5_000,
        },
      ),
    );
    await refusedByServer(mallory.jetstream().consumers.get(TASKS));
    await refusedByServer(mallory.request(`$JS.API.STREAM.MSG.GET.${TASKS}`, encode({ seq: 1 }), { timeout: 5_000 }));
    // Her own queue's create subject, with a body that reads alice's tasks: no create is hers.
    await refusedByServer(
      mallory.request(
        `$JS.API.CONSUMER.CREATE.${TASKS}.member-mallory.council.v1.tasks.mallory`,
        encode({
          stream_name: TASKS,
          config: { ...memberTaskConsumerConfig('council', 'mallory'), filter_subject: 'council.v1.tasks.alice' },
        }),
        { timeout: 5_000 },
      ),
    );
    // An answer in alice's name, signed by mallory.
    const forged = encode({ run_id: runId, task_id: alice.tasks[0].task_id, ok: true, artifact: { position: 'mallory was here' } });
    const h = headers();
    for (const [k, v] of Object.entries(await signer('mallory')('council.v1.answers.alice', forged))) h.set(k, v);
    await refusedByServer(mallory.request('council.v1.answers.alice', forged, { timeout: 5_000, headers: h }));
    // Not even her own queue: only the council service makes a member's queue (a create could
    // name a deliver subject); she may ask whether it exists, and it does not (she has no task).
    await refusedByServer(ensureMemberTaskConsumer(jsm, TASKS, 'council', 'mallory'));
    await expect(jsm.consumers.info(TASKS, 'member-mallory')).rejects.toMatchObject({ api_error: { err_code: 10014 } });

    // Then: the run decides on alice's and bob's answers alone.
    release();
    const record = await eventually(
      async () => {
        const r: RunRecord = await owner.get(runId);
        return r.terminal ? r : undefined;
      },
      60_000,
      'the run to end',
    );
    expect(record.terminal?.terminal_state).toMatch(/^decided/);
    expect(record.refusals).toEqual([]);
    expect(JSON.stringify(record)).not.toContain('mallory was here');
    expect(record.artifacts.reviews.map((r) => r.reviewer_member_id).sort()).toEqual(expect.arrayContaining(['alice', 'bob']));
    expect(alice.verdicts.every((v) => v.verdict.ok)).toBe(true);
    expect(bob.verdicts.every((v) => v.verdict.ok)).toBe(true);
    // No consumer on the task queues but the members' own, made by the council service: pull, no deliver subject.
    const consumers = await (await deployment.admin.nc.jetstreamManager()).consumers.list(TASKS).next();
    expect(consumers.map((c) => c.name).sort()).toEqual(['member-alice', 'member-bob']);
    expect(consumers.map((c) => c.config.deliver_subject)).toEqual([undefined, undefined]);
  }, 120_000);
});
