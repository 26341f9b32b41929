import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, DeliverPolicy, JetStreamManager, NatsConnection } from 'nats';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, FeedError, generateParticipantKeys, ParticipantKeyPair } from '@conclave/sdk';
import { eventually } from '../support/conclave-harness';
import { ACCOUNT_PASSWORDS, AccountsDeployment, accountsWithAgents, CLIENTS_JS_API_PREFIX } from '../support/accounts-nats';
import { runConclave } from '../support/cli';

const EVENTS = 'CONCLAVE_EVENTS';
const DECISIONS = acpStreamNames().decisions;
const INJECTED = 'conclave.evt.proposal.injected';
const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));

const conclave = runConclave;

/**
 * JetStream feeds under NATS accounts (deploy/nats/nats-accounts.conf on a private nats-server,
 * intake and the resolver as the services' user, authentication required). A consumer create
 * request may name a deliver subject, which the server then publishes to itself, past the
 * creator's permissions, into any stream capturing it (the event log, KV buckets, object stores):
 * so agents and readers create no consumer at all, and read through the durable pull feeds an
 * operator provisions for them (`conclave feeds provision`).
 */
describe('security: NATS accounts, no consumer creates by agents and readers; provisioned feeds', () => {
  const deployment = new AccountsDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-feeds-')),
    accountsWithAgents(['alice', 'bob', 'mallory']),
    generateParticipantKeys(),
  );
  const keys = new Map<string, ParticipantKeyPair>();
  const clients: ConclaveClient[] = [];

  const natsAs = (user: string): Promise<NatsConnection> => deployment.connectAs(user);
  const clientAs = async (user: string, signAs?: string): Promise<ConclaveClient> => {
    const client = await ConclaveClient.connect({
      nc: await natsAs(user),
      ...(signAs ? { signer: ed25519Signer(signAs, keys.get(signAs)!.privateKeyPem) } : {}),
    });
    clients.push(client);
    return client;
  };
  const servicesJsm = () => deployment.admin.nc.jetstreamManager();
  const refusedByServer = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
  const operatorEnv = () => ({
    NATS_URL: deployment.url,
    NATS_USER: 'conclave-services',
    NATS_PASSWORD: ACCOUNT_PASSWORDS['CONCLAVE_SERVICES_PASSWORD'],
  });

  beforeAll(async () => {
    await deployment.start();
    await deployment.startService('resolver');
    await deployment.startService('council');
    for (const id of ['alice', 'bob', 'mallory']) {
      const pair = generateParticipantKeys();
      keys.set(id, pair);
      await deployment.admin.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['agent'], public_key: pair.publicKey });
      await deployment.admin.call(REGISTRY_PATTERNS.grant, { participant_id: id, domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
    }
    // Something in the event log and on the decision stream before the attacks.
    const alice = await clientAs('alice', 'alice');
    const bob = await clientAs('bob', 'bob');
    const p = await alice.propose({ domain: 'risk', author: 'alice', payload: { limit: 1 }, quorum: 1 });
    await bob.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.9 });
    await eventually(
      async () => ((await (await servicesJsm()).streams.info(DECISIONS)).state.messages > 0 ? true : undefined),
      20_000,
      'the first decision on ACP_DECISIONS',
    );
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await deployment.stop();
  });

  it('given a services subscriber on the event-log subjects, when mallory (an agent) and a reader try every way to create a consumer on every stream, an ordered one, ephemeral and durable push ones delivering into conclave.evt, a durable pull one, then the server refuses each and the event log gains nothing', async () => {
    // Given: the streams of the deployment (event log, decisions, KV buckets, object stores...),
    // and interest on the injection subject, which a push delivery needs.
    const jsm = await servicesJsm();
    const streams: string[] = [];
    for await (const name of jsm.streams.names()) streams.push(name);
    expect(streams).toEqual(expect.arrayContaining([EVENTS, DECISIONS, acpStreamNames().proposals, acpStreamNames().councilTasks]));
    expect(streams.filter((s) => /^(KV|OBJ)_/.test(s)).length).toBeGreaterThanOrEqual(2);
    const listening = deployment.admin.nc.subscribe(INJECTED);
    const eventsBefore = (await jsm.streams.info(EVENTS)).state.messages;
    const consumersBefore = new Map<string, number>();
    for (const s of streams) consumersBefore.set(s, (await jsm.streams.info(s)).state.consumer_count);

    // When: each attacker tries each form on each stream.
    for (const user of ['mallory', 'reader']) {
      const nc = await natsAs(user);
      const theirs: JetStreamManager = await nc.jetstreamManager();
      const feed = `feed-${user}`;
      // An ordered consumer: its create is refused (nats.js tries it again for some seconds, so
      // on the two streams worth following; its create subjects are among the forms below).
      for (const stream of [EVENTS, DECISIONS]) {
        await refusedByServer(
          nc
            .jetstream()
            .consumers.get(stream)
            .then((c) => c.next({ expires: 1_000 })),
        );
      }
      for (const stream of streams) {
        const push = { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, deliver_subject: INJECTED };
        await refusedByServer(theirs.consumers.add(stream, push));
        await refusedByServer(theirs.consumers.add(stream, { ...push, durable_name: feed }));
        await refusedByServer(theirs.consumers.add(stream, { durable_name: feed, ack_policy: AckPolicy.Explicit }));
        for (const subject of [
          `$JS.API.CONSUMER.CREATE.${stream}`,
          `$JS.API.CONSUMER.CREATE.${stream}.${feed}`,
          `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${feed}`,
        ]) {
          await refusedByServer(
            nc.request(subject, encode({ stream_name: stream, config: { ...push, durable_name: feed } }), { timeout: 5_000 }),
          );
        }
      }
    }

    // Then: nothing was created anywhere and the event log holds what it held.
    await deployment.admin.nc.flush();
    listening.unsubscribe();
    for (const s of streams) expect([s, (await jsm.streams.info(s)).state.consumer_count]).toEqual([s, consumersBefore.get(s)]);
    expect((await jsm.streams.info(EVENTS)).state.messages).toBe(eventsBefore);
  }, 120_000);

  it('given feeds an operator provisioned with `conclave feeds provision`, when alice (an agent) and a reader bind to theirs, then each reads the decisions, alice only those of her filter, and neither can follow decisions any other way', async () => {
    // Given: the operator provisions alice's feed (risk decisions) and the reader's (all).
    const aliceFeed = await conclave(
      ['feeds', 'provision', '--stream', DECISIONS, '--durable', 'feed-alice', '--filter', 'acp.v1.decisions.risk'],
      operatorEnv(),
    );
    expect(aliceFeed).toMatchObject({ code: 0, stdout: expect.stringContaining('provisioned: feed feed-alice on ACP_DECISIONS') });
    const readerFeed = await conclave(['--json', 'feeds', 'provision', '--stream', DECISIONS, '--durable', 'feed-reader'], operatorEnv());
    expect(readerFeed.code).toBe(0);
    expect(JSON.parse(readerFeed.stdout)).toEqual({ created: true, stream: DECISIONS, durable: 'feed-reader', filter: null });
    // Provisioning again changes nothing; another filter under the same name is a conflict.
    const again = await conclave(['feeds', 'provision', '--stream', DECISIONS, '--durable', 'feed-reader'], operatorEnv());
    expect(again).toMatchObject({ code: 0, stdout: expect.stringContaining('already provisioned') });
    const conflict = await conclave(
      ['feeds', 'provision', '--stream', DECISIONS, '--durable', 'feed-reader', '--filter', 'acp.v1.decisions.ops'],
      operatorEnv(),
    );
    expect(conflict).toMatchObject({ code: 2, stderr: expect.stringContaining('FEED_CONFLICT') });
    // The feeds are pull consumers: the server publishes them nowhere on its own.
    const jsm = await servicesJsm();
    expect((await jsm.consumers.info(DECISIONS, 'feed-alice')).config.deliver_subject).toBeUndefined();

    // When: alice and the reader bind to their feeds.
    const alice = await clientAs('alice', 'alice');
    // The reader connects itself, as a downstream system does: its own user, inbox prefix and the
    // JetStream API prefix of its account.
    const reader = await ConclaveClient.connect({
      servers: deployment.url,
      user: 'reader',
      pass: ACCOUNT_PASSWORDS['CONCLAVE_READER_PASSWORD'],
      inboxPrefix: '_INBOX_reader',
      jsApiPrefix: CLIENTS_JS_API_PREFIX,
    });
    clients.push(reader);
    const first = async (feed: AsyncGenerator<DecisionEvent>) => {
      const { value } = await feed.next();
      await feed.return(undefined);
      return value as DecisionEvent;
    };
    const seenByAlice = await first(alice.decisions({ durable: 'feed-alice', bind: true, domain: 'risk' }));
    const seenByReader = await first(reader.decisions({ durable: 'feed-reader', bind: true }));

    // Then: both read the decision; alice's feed is the operator's filter, not one she picks.
    expect(seenByAlice).toMatchObject({ event_type: 'decision', domain: 'risk', outcome: 'approved' });
    expect(seenByReader.event_id).toBe(seenByAlice.event_id);
    await expect(first(alice.decisions({ durable: 'feed-alice', bind: true, domain: 'ops' }))).rejects.toMatchObject({
      code: 'FEED_CONFLICT',
    });
    // Bob has no feed: binding says so, and he may not make one; nor may anyone follow decisions
    // with a consumer of their own (ordered, or a durable created on first use).
    const bob = await clientAs('bob', 'bob');
    const missing = first(bob.decisions({ durable: 'feed-bob', bind: true }));
    await expect(missing).rejects.toBeInstanceOf(FeedError);
    await expect(first(bob.decisions({ durable: 'feed-bob', bind: true }))).rejects.toMatchObject({ code: 'FEED_NOT_PROVISIONED' });
    await refusedByServer(first(bob.decisions({ durable: 'feed-bob' })));
    await refusedByServer(first(reader.decisions()));
    await refusedByServer(first(alice.decisions({ domain: 'risk' })));
    // Nor pull from another's feed.
    await refusedByServer(first(alice.decisions({ durable: 'feed-reader', bind: true })));
  }, 120_000);
});
