import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsConnection } from 'nats';
import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { bindFeed, ConclaveClient, ed25519Signer, generateParticipantKeys, ParticipantKeyPair, provisionFeed } from '@conclave/sdk';
import { eventually } from '../support/conclave-harness';
import { AccountsDeployment, accountsWithAgents, CLIENTS_JS_API_PREFIX, LISTENER_ENTRY } from '../support/accounts-nats';

const EVENTS = 'CONCLAVE_EVENTS';
const { decisions: DECISIONS, proposals: PROPOSALS, escalations: ESCALATIONS } = acpStreamNames();
const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));

/**
 * The reply subject of a request is the requester's choice, and NATS checks no permission on it:
 * whoever answers publishes there with its own rights. The JetStream API answers a pull with the
 * pulled messages themselves. So an agent allowed only to pull from its own feed aims the reply
 * at the event log's subjects, a KV bucket or an object store, and the server writes there. Tried
 * with every API prefix a client could use (the server's own `$JS.API`, and the services' API as
 * the clients' account imports it), on every JetStream API subject the client is allowed, on a
 * command, and on an acknowledgement.
 */
describe("security: NATS accounts, reply subjects aimed at the services' storage", () => {
  const deployment = new AccountsDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-replies-')),
    accountsWithAgents(['alice', 'bob', 'mallory'], [LISTENER_ENTRY]),
    generateParticipantKeys(),
  );
  const keys = new Map<string, ParticipantKeyPair>();
  const clients: ConclaveClient[] = [];

  const servicesJsm = () => deployment.admin.nc.jetstreamManager();
  /** Messages held by each stream of the services' account (event log, decisions, KV buckets, object stores...). */
  const counts = async (): Promise<Record<string, number>> => {
    const jsm = await servicesJsm();
    const out: Record<string, number> = {};
    for await (const info of jsm.streams.list()) out[info.config.name] = info.state.messages;
    return out;
  };

  beforeAll(async () => {
    await deployment.start();
    await deployment.startService('resolver');
    await deployment.startService('council');
    await deployment.startService('audit');
    await deployment.startService('escalation');
    for (const id of ['alice', 'bob', 'mallory', 'carol']) {
      const pair = generateParticipantKeys();
      keys.set(id, pair);
      const roles = id === 'carol' ? ['human-resolver'] : ['agent'];
      await deployment.admin.call(REGISTRY_PATTERNS.register, { participant_id: id, roles, public_key: pair.publicKey });
      await deployment.admin.call(REGISTRY_PATTERNS.grant, {
        participant_id: id,
        domain: 'risk',
        domain_authority: 0.9,
        trust_score: 0.9,
        ...(id === 'carol' ? { actions: ['resolve'] } : {}),
      });
    }
    // Mallory's feeds, provisioned as an operator does, with messages waiting in them.
    const jsm = await servicesJsm();
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-mallory' });
    await provisionFeed(jsm, { stream: PROPOSALS, durable: 'feed-mallory' });
    await provisionFeed(jsm, { stream: DECISIONS, durable: 'feed-reader' });
    for (const id of ['alice', 'bob', 'mallory']) {
      const pair = keys.get(id) as ParticipantKeyPair;
      clients.push(await ConclaveClient.connect({ nc: await deployment.connectAs(id), signer: ed25519Signer(id, pair.privateKeyPem) }));
    }
    for (let i = 0; i < 3; i++) {
      const p = await clients[0].propose({ domain: 'risk', author: 'alice', payload: { limit: i }, quorum: 1 });
      await clients[1].endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.9 });
    }
    await eventually(
      async () => ((await (await servicesJsm()).consumers.info(DECISIONS, 'feed-mallory')).num_pending >= 3 ? true : undefined),
      20_000,
      "three decisions waiting in mallory's feed",
    );
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await deployment.stop();
  });

  it('given an agent and a reader that may pull only from their own feeds, when they send pulls, consumer and stream info, acknowledgements and commands whose reply subject is the event log, every KV bucket or every object store, then no stream of the services gains a message', async () => {
    // Given: the storage of the services, and its content once the services are idle.
    const jsm = await servicesJsm();
    const names = Object.keys(await counts());
    const buckets = names.filter((s) => s.startsWith('KV_')).map((s) => s.slice(3));
    const stores = names.filter((s) => s.startsWith('OBJ_')).map((s) => s.slice(4));
    expect(names).toEqual(expect.arrayContaining([EVENTS, DECISIONS, PROPOSALS]));
    expect(buckets.length).toBeGreaterThanOrEqual(2);
    expect(stores.length).toBeGreaterThanOrEqual(1);
    const targets = [
      'conclave.evt.proposal.injected',
      ...buckets.map((b) => `$KV.${b}.injected`),
      ...stores.flatMap((o) => [`$O.${o}.M.aW5qZWN0ZWQ`, `$O.${o}.C.injected`]),
    ];
    const before = await eventually(
      async () => {
        const a = await counts();
        await new Promise((r) => setTimeout(r, 500));
        const b = await counts();
        return JSON.stringify(a) === JSON.stringify(b) ? b : undefined;
      },
      20_000,
      'the services idle',
    );

    const deliveredBefore = (await jsm.consumers.info(DECISIONS, 'feed-mallory')).delivered.consumer_seq;
    const listener = await deployment.connectAs('listener');
    const heard = new Map<string, number>();
    for (const target of targets) {
      // Counted per subscription: a pulled message keeps its stream subject.
      listener.subscribe(target, { callback: () => heard.set(target, (heard.get(target) ?? 0) + 1) });
    }
    await listener.flush();

    // When: mallory and the reader aim every request they may send at each target.
    const feeds: Record<string, [string, string][]> = {
      mallory: [
        [DECISIONS, 'feed-mallory'],
        [PROPOSALS, 'feed-mallory'],
      ],
      reader: [[DECISIONS, 'feed-reader']],
    };
    for (const user of ['mallory', 'reader']) {
      const nc: NatsConnection = await deployment.connectAs(user);
      for (const api of [...new Set(['$JS.API', CLIENTS_JS_API_PREFIX])]) {
        for (const reply of targets) {
          const send = (subject: string, body: unknown) => nc.publish(subject, encode(body), { reply });
          send(`${api}.INFO`, {});
          send(`${api}.STREAM.NAMES`, {});
          for (const [stream, durable] of feeds[user]) {
            send(`${api}.STREAM.INFO.${stream}`, {});
            send(`${api}.CONSUMER.INFO.${stream}.${durable}`, {});
            send(`${api}.CONSUMER.MSG.NEXT.${stream}.${durable}`, { batch: 2, expires: 1_000_000_000 });
            send(`${api}.CONSUMER.MSG.NEXT.${stream}.${durable}`, { batch: 1, no_wait: true });
          }
        }
      }
      for (const reply of targets) {
        nc.publish('acp.v1.list', encode({}), { reply });
        // An acknowledgement with a reply asks the server for a confirmation there.
        nc.publish(`$JS.ACK.${DECISIONS}.feed-${user}.1.1.1.1.0`, encode(''), { reply });
      }
      await nc.flush();
    }
    // The long pulls answer at their expiry (a second), into the same reply subject.
    await new Promise((r) => setTimeout(r, 2_000));

    // Then: the requests were answered, pulls included (the server delivered from mallory's feed),
    // on every target as the agents' account sees it...
    expect((await jsm.consumers.info(DECISIONS, 'feed-mallory')).delivered.consumer_seq).toBeGreaterThan(deliveredBefore);
    expect(targets.filter((t) => !heard.has(t))).toEqual([]);
    // ...and nothing landed on the targets; the event log, the buckets and the stores hold what they held.
    const landed: Record<string, number> = {};
    for (const target of targets) {
      const stream = target.startsWith('conclave.')
        ? EVENTS
        : target.startsWith('$KV.')
          ? `KV_${target.split('.')[1]}`
          : `OBJ_${target.split('.')[1]}`;
      const n = (await jsm.streams.info(stream, { subjects_filter: target })).state.subjects?.[target] ?? 0;
      if (n > 0) landed[target] = n;
    }
    expect(landed).toEqual({});
    const after = await counts();
    const changed = [EVENTS, ...buckets.map((b) => `KV_${b}`), ...stores.map((o) => `OBJ_${o}`)].filter((s) => after[s] !== before[s]);
    expect(changed.map((s) => `${s}: ${before[s]} -> ${after[s]}`)).toEqual([]);
  }, 120_000);

  it("given the same accounts, when agents vote a proposal to a tie, then the escalation reaches the human's feed, the human's signed resolution decides it, and the reader reads both decisions from its feed", async () => {
    // Given: the human's feed on the escalations, provisioned by an operator.
    const jsm = await servicesJsm();
    await provisionFeed(jsm, { stream: ESCALATIONS, durable: 'feed-human' });
    const [alice, bob, mallory] = clients;

    // When: alice proposes, bob endorses and mallory challenges (a tie: escalated).
    const p = await alice.propose({ domain: 'risk', author: 'alice', payload: { tie: true }, quorum: 2 });
    await bob.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.8 });
    await mallory.challenge(p.proposal_id, { participant_id: 'mallory', confidence: 0.8 });

    // Then: the human (NATS user `human`) pulls the escalation from its feed...
    const humanNc = await deployment.connectAs('human');
    const feed = await bindFeed(humanNc, ESCALATIONS, 'feed-human');
    const escalation = await eventually(
      async () => {
        const m = await feed.next({ expires: 1_000 });
        if (!m) return undefined;
        await m.ackAck();
        return new TextDecoder().decode(m.data).includes(p.proposal_id) ? m : undefined;
      },
      30_000,
      "the escalation in the human's feed",
    );
    expect(escalation.subject).toMatch(/^acp\.v1\.escalations\./);
    // ...and resolves it, signed as carol, a human resolver of risk.
    const carol = await ConclaveClient.connect({
      nc: humanNc,
      signer: ed25519Signer('carol', (keys.get('carol') as ParticipantKeyPair).privateKeyPem),
    });
    clients.push(carol);
    const resolved = await carol.resolve(p.proposal_id, {
      outcome: 'approved',
      resolved_by: 'carol',
      note: 'approved across the accounts',
    });
    expect(resolved.resolution).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'carol' });
    // The reader follows its provisioned feed and reads the escalation and the resolution.
    const reader = await ConclaveClient.connect({ nc: await deployment.connectAs('reader') });
    clients.push(reader);
    const seen: DecisionEvent[] = [];
    const stop = new AbortController();
    for await (const d of reader.decisions({ durable: 'feed-reader', bind: true, signal: stop.signal })) {
      if (d.proposal_id === p.proposal_id) seen.push(d);
      if (seen.length === 2) break;
    }
    expect(seen.map((d) => [d.outcome, d.trigger])).toEqual([
      ['escalated', 'quorum'],
      ['approved', 'manual'],
    ]);
  }, 90_000);
});
