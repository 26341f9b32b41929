import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, connect, NatsConnection } from 'nats';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys, ParticipantKeyPair, provisionFeed } from '@conclave/sdk';
import { eventually } from '../support/conclave-harness';
import { ACCOUNT_PASSWORDS, accountsWithAgents, CLIENTS_JS_API_PREFIX, LISTENER_ENTRY } from '../support/accounts-nats';
import { OperatorDeployment } from '../support/operator-nats';

const EVENTS = 'CONCLAVE_EVENTS';
const { decisions: DECISIONS } = acpStreamNames();
const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));

/**
 * deploy/nats/nats-accounts.conf in operator mode: the same two accounts, exports, imports and
 * permissions as operator, account and user JWTs (private exports with activation tokens), a
 * MEMORY resolver, every user (the services through NATS_CREDS) with a creds file of its own.
 */
describe('security: NATS operator mode (JWT accounts, one NKEY per user), from the accounts config', () => {
  const deployment = new OperatorDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-operator-')),
    accountsWithAgents(['alice', 'bob', 'mallory'], [LISTENER_ENTRY]),
    generateParticipantKeys(),
  );
  const keys = new Map<string, ParticipantKeyPair>();
  const clients: ConclaveClient[] = [];
  const servicesJsm = () => deployment.admin.nc.jetstreamManager();
  const refusedByServer = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
  const clientAs = async (id: string) => {
    const pair = keys.get(id) as ParticipantKeyPair;
    const client = await ConclaveClient.connect({ nc: await deployment.connectAs(id), signer: ed25519Signer(id, pair.privateKeyPem) });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    await deployment.start();
    await deployment.startService('resolver');
    for (const id of ['alice', 'bob', 'mallory']) {
      const pair = generateParticipantKeys();
      keys.set(id, pair);
      await deployment.admin.call(REGISTRY_PATTERNS.register, { participant_id: id, roles: ['agent'], public_key: pair.publicKey });
      await deployment.admin.call(REGISTRY_PATTERNS.grant, { participant_id: id, domain: 'risk', domain_authority: 0.9, trust_score: 0.9 });
    }
    const jsm = await servicesJsm();
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-reader' });
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-mallory' });
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await deployment.stop();
  });

  it('given the services and agents logged in with creds files, when alice proposes and bob endorses, then the decision is made and the reader reads it from its provisioned feed; a password login is refused', async () => {
    // Given / when: two agents of the clients' account, signed.
    const alice = await clientAs('alice');
    const bob = await clientAs('bob');
    const p = await alice.propose({ domain: 'risk', author: 'alice', payload: { operator: true }, quorum: 1 });
    await bob.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.9 });

    // Then: the reader (its own creds) binds to its feed through the imported API.
    const reader = await ConclaveClient.connect({ nc: await deployment.connectAs('reader') });
    clients.push(reader);
    let decision: DecisionEvent | undefined;
    for await (const d of reader.decisions({ durable: 'feed-reader', bind: true })) {
      if (d.proposal_id === p.proposal_id) {
        decision = d;
        break;
      }
    }
    expect(decision).toMatchObject({ outcome: 'approved', domain: 'risk' });
    // The passwords of the accounts config mean nothing here.
    await expect(
      connect({ servers: deployment.url, user: 'agent', pass: ACCOUNT_PASSWORDS['CONCLAVE_AGENT_PASSWORD'], reconnect: false }),
    ).rejects.toThrow(/Authorization|AUTHORIZATION/i);
  }, 60_000);

  it("given mallory's creds, when she goes after the reader's feed, creates a consumer, or aims her pulls' and commands' reply subjects at the event log, the KV buckets and the snapshot store, then the server refuses or the answers stay in the clients' account: the storage is unchanged", async () => {
    // Given: the storage of the services and a listener in the clients' account on the targets.
    const jsm = await servicesJsm();
    const names: string[] = [];
    for await (const s of jsm.streams.names()) names.push(s);
    const targets = [
      'conclave.evt.proposal.injected',
      ...names.filter((s) => s.startsWith('KV_')).map((s) => `$KV.${s.slice(3)}.injected`),
      ...names.filter((s) => s.startsWith('OBJ_')).map((s) => `$O.${s.slice(4)}.C.injected`),
    ];
    expect(targets.length).toBeGreaterThanOrEqual(4);
    const storage = [EVENTS, ...names.filter((s) => /^(KV|OBJ)_/.test(s))];
    const held = async () =>
      Object.fromEntries(await Promise.all(storage.map(async (s) => [s, (await jsm.streams.info(s)).state.messages])));
    const listener = await deployment.connectAs('listener');
    const heard = new Set<string>();
    // Counted per subscription: a pulled message keeps its stream subject.
    for (const t of targets) listener.subscribe(t, { callback: () => heard.add(t) });
    await listener.flush();
    const before = await held();

    // When: mallory's refused tries, then her reply-subject attack on what she may send.
    const mallory: NatsConnection = await deployment.connectAs('mallory');
    const theirs = await mallory.jetstreamManager();
    await refusedByServer(theirs.consumers.info(DECISIONS, 'feed-reader'));
    await refusedByServer(theirs.consumers.add(DECISIONS, { ack_policy: AckPolicy.None, deliver_subject: targets[0] }));
    await refusedByServer(mallory.request(`$JS.API.CONSUMER.MSG.NEXT.${DECISIONS}.feed-mallory`, encode({ batch: 1 }), { timeout: 2_000 }));
    for (const reply of targets) {
      mallory.publish(`${CLIENTS_JS_API_PREFIX}.CONSUMER.INFO.${DECISIONS}.feed-mallory`, encode({}), { reply });
      mallory.publish(`${CLIENTS_JS_API_PREFIX}.CONSUMER.MSG.NEXT.${DECISIONS}.feed-mallory`, encode({ batch: 1, no_wait: true }), {
        reply,
      });
      mallory.publish('acp.v1.list', encode({}), { reply });
    }
    await mallory.flush();
    await eventually(async () => (heard.size === targets.length ? true : undefined), 10_000, 'the answers in the clients account');

    // Then: every target was answered in the clients' account, and the storage holds what it held.
    expect(await held()).toEqual(before);
  }, 60_000);
});
