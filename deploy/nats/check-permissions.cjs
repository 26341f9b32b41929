// Live check of deploy/nats/nats-accounts.conf against a running nats-server that includes it:
// connects as each user and asserts what is allowed and what is denied. deploy/validate.sh starts
// a throwaway server and runs this; by hand: NATS_TEST_URL=nats://host:port plus the
// CONCLAVE_*_PASSWORD variables, then `node deploy/nats/check-permissions.cjs`.
// It creates the streams it needs, so point it only at a scratch server.
//
// The services' user is in the account CONCLAVE, which holds JetStream; every other user is in
// CLIENTS, which imports the feeds' JetStream API under API (below). The JetStream clients of
// those users use it: nc.jetstream({apiPrefix: API}), nc.jetstreamManager({apiPrefix: API, checkAPI: false}).
const { connect, StringCodec, AckPolicy } = require('nats');
const API = '$JS.conclave.API';
const url = process.env.NATS_TEST_URL || 'nats://127.0.0.1:14335';
const sc = StringCodec();
const pw = (k) => process.env[k];
const results = [];
const expect = (name, ok, want) => {
  results.push({ name, ok, want, pass: ok === want });
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Each user subscribes only below its own inbox prefix, so its client must use that prefix.
async function conn(user, pass, inboxPrefix = `_INBOX_${user}`) {
  const nc = await connect({ servers: url, user, pass, name: user, inboxPrefix });
  nc.errors = [];
  (async () => {
    for await (const s of nc.status()) if (s.type === 'error') nc.errors.push(`${s.data} "${s.permissionContext?.subject}"`);
  })();
  return nc;
}
// A violation reported for this subject (a late report for an earlier refusal names another one).
const isViolation = (e, subject) => (/Permissions Violation/i.test(e) || /PERMISSIONS_VIOLATION/.test(e)) && e.includes(`"${subject}"`);
// A publish is "allowed" when the server reports no permissions violation for it.
async function tryPub(nc, subject) {
  const before = nc.errors.length;
  nc.publish(subject, sc.encode('x'));
  await nc.flush();
  await sleep(50);
  return !nc.errors.slice(before).some((e) => isViolation(e, subject));
}
// The JetStream API of a client user, as its account imports it.
const clientJs = (nc) => nc.jetstream({ apiPrefix: API });
const clientJsm = (nc) => nc.jetstreamManager({ apiPrefix: API, checkAPI: false });
async function trySub(nc, subject) {
  const before = nc.errors.length;
  const sub = nc.subscribe(subject);
  await nc.flush();
  await sleep(50);
  const ok = !nc.errors.slice(before).some((e) => isViolation(e, subject));
  sub.unsubscribe();
  return ok;
}
async function tryReq(nc, subject) {
  try {
    await nc.request(subject, sc.encode('{}'), { timeout: 1000 });
    return true;
  } catch (e) {
    return false;
  }
}

(async () => {
  const svc = await conn('conclave-services', pw('CONCLAVE_SERVICES_PASSWORD'));
  const jsm = await svc.jetstreamManager();
  for (const [name, subj, retention] of [
    ['CONCLAVE_EVENTS', 'conclave.evt.>'],
    ['ACP_DECISIONS', 'acp.v1.decisions.>'],
    ['ACP_PROPOSALS', 'acp.v1.proposals.>'],
    ['ACP_ESCALATIONS', 'acp.v1.escalations.>'],
    ['COUNCIL_DECISIONS', 'council.v1.decisions'],
    ['COUNCIL_TASKS', 'council.v1.tasks.*', 'workqueue'],
    ['KV_CHECK', '$KV.CHECK.>'],
    ['OBJ_CHECK', '$O.CHECK.>'],
  ]) {
    await jsm.streams.add({ name, subjects: [subj], ...(retention ? { retention } : {}) }).catch((e) => {
      if (e?.api_error?.err_code !== 10058) throw e; // exists already (another config): reuse it
    });
  }
  const js = svc.jetstream();
  await js.publish('conclave.evt.proposal.p1', sc.encode('{}'), { msgID: 'e1' });
  await js.publish('acp.v1.decisions.risk', sc.encode('{"d":1}'), { msgID: 'd1' });
  await js.publish('acp.v1.escalations.risk', sc.encode('{"e":1}'), { msgID: 'x1' });
  expect('services: JetStream append to event log', true, true);
  // services serve the command subjects in a queue group
  for (const s of [
    'acp.v1.propose',
    'acp.v1.respond',
    'acp.v1.escalate',
    'acp.v1.get',
    'acp.v1.list',
    'acp.v1.lineage',
    'acp.v1.resolve',
    'council.v1.start',
    'council.v1.schemas',
  ]) {
    svc.subscribe(s, { queue: 'q', callback: (_e, m) => m.respond(sc.encode('{"ok":true}')) });
  }
  await svc.flush();

  const agent = await conn('agent', pw('CONCLAVE_AGENT_PASSWORD'));
  expect('agent: request acp.v1.propose', await tryReq(agent, 'acp.v1.propose'), true);
  expect('agent: request acp.v1.lineage', await tryReq(agent, 'acp.v1.lineage'), true);
  expect('agent: request council.v1.start', await tryReq(agent, 'council.v1.start'), true);
  expect('agent: request council.v1.schemas', await tryReq(agent, 'council.v1.schemas'), true);
  expect('agent: request acp.v1.resolve (human only)', await tryReq(agent, 'acp.v1.resolve'), false);
  expect('agent: publish conclave.evt.proposal.p1', await tryPub(agent, 'conclave.evt.proposal.p1'), false);
  expect('agent: publish acp.v1.decisions.risk', await tryPub(agent, 'acp.v1.decisions.risk'), false);
  expect('agent: publish $JS.API.STREAM.DELETE.CONCLAVE_EVENTS', await tryPub(agent, '$JS.API.STREAM.DELETE.CONCLAVE_EVENTS'), false);
  expect('agent: publish _INBOX.forged (blanket inbox publish)', await tryPub(agent, '_INBOX.forged'), false);
  expect('agent: subscribe acp.v1.proposals.>', await trySub(agent, 'acp.v1.proposals.>'), true);
  expect('agent: subscribe acp.v1.decisions.>', await trySub(agent, 'acp.v1.decisions.>'), false);
  expect('agent: subscribe conclave.evt.>', await trySub(agent, 'conclave.evt.>'), false);
  // Nobody but the services creates a consumer: a create request may name a deliver subject, and
  // the server then publishes the consumer's messages there past the creator's permissions. Every
  // create form is tried on every stream, each with a deliver subject aimed at the event log.
  const refused = async (p) => {
    try {
      await p;
      return false;
    } catch (e) {
      return e.code === 'PERMISSIONS_VIOLATION';
    }
  };
  const STREAMS = ['CONCLAVE_EVENTS', 'ACP_DECISIONS', 'ACP_PROPOSALS', 'ACP_ESCALATIONS', 'COUNCIL_DECISIONS', 'COUNCIL_TASKS'];
  const createForms = (stream, name) => {
    const body = (config) => sc.encode(JSON.stringify({ stream_name: stream, config }));
    const push = { ack_policy: 'none', deliver_subject: 'conclave.evt.proposal.injected' };
    return ['$JS.API', API].flatMap((api) => [
      [`${api}.CONSUMER.CREATE.${stream}`, body(push)],
      [`${api}.CONSUMER.CREATE.${stream}.${name}`, body({ ...push, name })],
      [`${api}.CONSUMER.CREATE.${stream}.${name}.conclave.evt.>`, body({ ...push, name, filter_subject: 'conclave.evt.>' })],
      [`${api}.CONSUMER.DURABLE.CREATE.${stream}.${name}`, body({ ...push, durable_name: name })],
    ]);
  };
  const createsNothing = async (nc, who, name) => {
    const allowed = [];
    for (const stream of STREAMS) {
      for (const [subject, data] of createForms(stream, name)) {
        if (!(await refused(nc.request(subject, data, { timeout: 1000 })))) allowed.push(subject);
      }
    }
    expect(`${who}: create any consumer (${allowed.join(', ') || 'every form on every stream refused'})`, allowed.length > 0, false);
  };
  const eventsBefore = (await jsm.streams.info('CONCLAVE_EVENTS')).state.messages;

  // The services make each client's feed and each member's task queue: durable pull consumers.
  const pull = (durable, filter) => ({
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    ...(filter ? { filter_subject: filter } : {}),
  });
  await jsm.consumers.add('COUNCIL_TASKS', pull('member-agent', 'council.v1.tasks.agent'));
  await jsm.consumers.add('ACP_PROPOSALS', pull('feed-agent'));
  await jsm.consumers.add('ACP_DECISIONS', pull('feed-agent', 'acp.v1.decisions.risk'));
  await jsm.consumers.add('ACP_DECISIONS', pull('feed-reader'));
  await jsm.consumers.add('COUNCIL_DECISIONS', pull('feed-reader'));
  await jsm.consumers.add('ACP_ESCALATIONS', pull('feed-human'));
  await jsm.consumers.add('ACP_DECISIONS', pull('feed-other'));
  await js.publish('acp.v1.proposals.risk', sc.encode('{"p":1}'), { msgID: 'p1' });
  await js.publish('council.v1.decisions', sc.encode('{"c":1}'), { msgID: 'c1' });
  /** Binds to a provisioned consumer (info), pulls one message and acknowledges it. */
  const pullsOne = async (nc, stream, durable, want) => {
    const m = await (await clientJs(nc).consumers.get(stream, durable)).next({ expires: 2000 });
    if (!m || sc.decode(m.data) !== want) throw new Error(`got ${m ? sc.decode(m.data) : 'nothing'}`);
    m.working();
    await m.ackAck();
  };
  const canPull = async (nc, who, stream, durable, want) => {
    try {
      await pullsOne(nc, stream, durable, want);
      expect(`${who}: its provisioned ${stream} ${durable} (info, next, ack)`, true, true);
    } catch (e) {
      expect(`${who}: its provisioned ${stream} ${durable} (${e.message})`, false, true);
    }
  };

  // Council tasks: the agent's own durable queue (consumer member-agent on COUNCIL_TASKS, made by
  // the services) and its own answer subject; another member's queue and answers are refused.
  const ajsm = await clientJsm(agent);
  await js.publish('council.v1.tasks.agent', sc.encode('{"task":1}'));
  await js.publish('council.v1.tasks.m1', sc.encode('{"task":2}'));
  await canPull(agent, 'agent', 'COUNCIL_TASKS', 'member-agent', '{"task":1}');
  await canPull(agent, 'agent', 'ACP_PROPOSALS', 'feed-agent', '{"p":1}');
  await canPull(agent, 'agent', 'ACP_DECISIONS', 'feed-agent', '{"d":1}');
  await createsNothing(agent, 'agent', 'member-agent');
  await createsNothing(agent, 'agent', 'feed-agent');
  svc.subscribe('council.v1.answers.*', { queue: 'q', callback: (_e, m) => m.respond(sc.encode('{"ok":true}')) });
  await svc.flush();
  expect('agent: request council.v1.answers.agent (its answers)', await tryReq(agent, 'council.v1.answers.agent'), true);
  expect("agent: request council.v1.answers.m1 (another member's answers)", await tryReq(agent, 'council.v1.answers.m1'), false);
  expect("agent: info of another member's consumer", !(await refused(ajsm.consumers.info('COUNCIL_TASKS', 'member-m1'))), false);
  expect("agent: info of another user's feed", !(await refused(ajsm.consumers.info('ACP_DECISIONS', 'feed-reader'))), false);
  expect(
    "agent: pull from another member's consumer",
    !(await refused(agent.request(`${API}.CONSUMER.MSG.NEXT.COUNCIL_TASKS.member-m1`, sc.encode('{"batch":1}'), { timeout: 1000 }))),
    false,
  );
  expect(
    "agent: pull from another user's feed",
    !(await refused(agent.request(`${API}.CONSUMER.MSG.NEXT.ACP_DECISIONS.feed-other`, sc.encode('{"batch":1}'), { timeout: 1000 }))),
    false,
  );
  expect("agent: subscribe council.v1.tasks.m1 (another member's tasks)", await trySub(agent, 'council.v1.tasks.m1'), false);
  expect('agent: subscribe _INBOX_agent.> (its own inbox)', await trySub(agent, '_INBOX_agent.>'), true);
  expect("agent: subscribe _INBOX.> (everyone's replies)", await trySub(agent, '_INBOX.>'), false);
  expect("agent: subscribe _INBOX_human.> (another user's inbox)", await trySub(agent, '_INBOX_human.>'), false);
  expect('agent: subscribe _INBOX_conclave-services.>', await trySub(agent, '_INBOX_conclave-services.>'), false);
  expect('services: subscribe _INBOX.>', await trySub(svc, '_INBOX.>'), false);
  expect(
    'agent: ordered consumer on ACP_PROPOSALS',
    !(await refused(
      clientJs(agent)
        .consumers.get('ACP_PROPOSALS')
        .then((c) => c.next({ expires: 1000 })),
    )),
    false,
  );

  const reader = await conn('reader', pw('CONCLAVE_READER_PASSWORD'));
  await canPull(reader, 'reader', 'ACP_DECISIONS', 'feed-reader', '{"d":1}');
  await canPull(reader, 'reader', 'COUNCIL_DECISIONS', 'feed-reader', '{"c":1}');
  await createsNothing(reader, 'reader', 'feed-reader');
  expect(
    'reader: ordered consumer on ACP_DECISIONS',
    !(await refused(
      clientJs(reader)
        .consumers.get('ACP_DECISIONS')
        .then((c) => c.next({ expires: 1000 })),
    )),
    false,
  );
  expect(
    "reader: pull from another user's feed",
    !(await refused(reader.request(`${API}.CONSUMER.MSG.NEXT.ACP_DECISIONS.feed-agent`, sc.encode('{"batch":1}'), { timeout: 1000 }))),
    false,
  );
  expect('reader: subscribe acp.v1.decisions.>', await trySub(reader, 'acp.v1.decisions.>'), true);
  expect('reader: subscribe _INBOX.>', await trySub(reader, '_INBOX.>'), false);
  expect('reader: request acp.v1.propose', await tryReq(reader, 'acp.v1.propose'), false);
  expect('reader: publish acp.v1.decisions.risk', await tryPub(reader, 'acp.v1.decisions.risk'), false);
  expect(
    'reader: publish $JS.conclave.API.CONSUMER.DELETE.ACP_DECISIONS.feed-reader',
    await tryPub(reader, `${API}.CONSUMER.DELETE.ACP_DECISIONS.feed-reader`),
    false,
  );
  // Core messages the services publish reach the clients' account (stream exports).
  const seen = [];
  const decisionsSub = reader.subscribe('acp.v1.decisions.>', { callback: (_e, m) => seen.push(m.subject) });
  await reader.flush();
  svc.publish('acp.v1.decisions.risk', sc.encode('{"core":1}'));
  await svc.flush();
  await sleep(200);
  decisionsSub.unsubscribe();
  expect('reader: receives acp.v1.decisions.risk published by the services', seen.includes('acp.v1.decisions.risk'), true);

  const human = await conn('human', pw('CONCLAVE_HUMAN_PASSWORD'));
  expect('human: request acp.v1.resolve', await tryReq(human, 'acp.v1.resolve'), true);
  expect('human: request acp.v1.propose', await tryReq(human, 'acp.v1.propose'), false);
  expect('human: subscribe _INBOX.>', await trySub(human, '_INBOX.>'), false);
  expect('human: subscribe _INBOX_agent.>', await trySub(human, '_INBOX_agent.>'), false);
  await canPull(human, 'human', 'ACP_ESCALATIONS', 'feed-human', '{"e":1}');
  await createsNothing(human, 'human', 'feed-human');
  expect('event log untouched by the refused creates', (await jsm.streams.info('CONCLAVE_EVENTS')).state.messages === eventsBefore, true);

  // Reply subjects: a request's reply subject is the requester's choice and NATS checks no
  // permission on it. Each client aims what it may send (its feed's info and pulls, stream info,
  // a command, an acknowledgement) at the event log, a KV bucket and an object store, under either
  // API prefix; the answers stay in CLIENTS, and the services' streams gain nothing.
  await svc.jetstream().publish('acp.v1.decisions.risk', sc.encode('{"d":2}'));
  await svc.jetstream().publish('acp.v1.escalations.risk', sc.encode('{"e":2}'));
  const storage = ['CONCLAVE_EVENTS', 'KV_CHECK', 'OBJ_CHECK'];
  const held = async () => Promise.all(storage.map(async (s) => (await jsm.streams.info(s)).state.messages));
  const storedBefore = await held();
  const targets = ['conclave.evt.proposal.injected', '$KV.CHECK.injected', '$O.CHECK.M.aW5qZWN0ZWQ'];
  for (const [nc, stream, durable, command] of [
    [agent, 'ACP_DECISIONS', 'feed-agent', 'acp.v1.propose'],
    [reader, 'ACP_DECISIONS', 'feed-reader', 'acp.v1.propose'],
    [human, 'ACP_ESCALATIONS', 'feed-human', 'acp.v1.resolve'],
  ]) {
    for (const reply of targets) {
      for (const api of ['$JS.API', API]) {
        nc.publish(`${api}.STREAM.INFO.${stream}`, sc.encode(''), { reply });
        nc.publish(`${api}.CONSUMER.INFO.${stream}.${durable}`, sc.encode(''), { reply });
        nc.publish(`${api}.CONSUMER.MSG.NEXT.${stream}.${durable}`, sc.encode('{"batch":1,"no_wait":true}'), { reply });
      }
      nc.publish(command, sc.encode('{}'), { reply });
      nc.publish(`$JS.ACK.${stream}.${durable}.1.1.1.1.0`, sc.encode(''), { reply });
    }
    await nc.flush();
  }
  await sleep(500);
  const storedAfter = await held();
  expect(
    `event log, KV bucket and object store untouched by reply subjects aimed at them (${storage.map((s, i) => `${s} ${storedBefore[i]} -> ${storedAfter[i]}`).join(', ')})`,
    storedAfter.every((n, i) => n === storedBefore[i]),
    true,
  );

  try {
    await connect({ servers: url, user: 'agent', pass: 'wrong' });
    expect('wrong password rejected', false, true);
  } catch {
    expect('wrong password rejected', true, true);
  }
  try {
    await connect({ servers: url });
    expect('anonymous rejected', false, true);
  } catch {
    expect('anonymous rejected', true, true);
  }

  for (const r of results) console.log(`${r.pass ? 'PASS' : 'FAIL'}  ${r.name}  (allowed=${r.ok}, expected=${r.want})`);
  const failed = results.filter((r) => !r.pass).length;
  console.log(failed ? `${failed} FAILED` : `all ${results.length} checks passed`);
  await Promise.all([svc, agent, reader, human].map((nc) => nc.close()));
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
