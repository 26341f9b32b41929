// Live check of deploy/nats/nats-accounts.conf against a running nats-server that includes it:
// connects as each user and asserts what is allowed and what is denied. deploy/validate.sh starts
// a throwaway server and runs this; by hand: NATS_TEST_URL=nats://host:port plus the
// CONCLAVE_*_PASSWORD variables, then `node deploy/nats/check-permissions.cjs`.
// It creates the streams it needs, so point it only at a scratch server.
const { connect, StringCodec, AckPolicy } = require('nats');
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
    for await (const s of nc.status()) if (s.type === 'error') nc.errors.push(String(s.data));
  })();
  return nc;
}
// A publish is "allowed" when the server reports no permissions violation for it.
async function tryPub(nc, subject) {
  const before = nc.errors.length;
  nc.publish(subject, sc.encode('x'));
  await nc.flush();
  await sleep(50);
  return !nc.errors.slice(before).some((e) => /Permissions Violation/i.test(e) || /PERMISSIONS_VIOLATION/.test(e));
}
async function trySub(nc, subject) {
  const before = nc.errors.length;
  const sub = nc.subscribe(subject);
  await nc.flush();
  await sleep(50);
  const ok = !nc.errors.slice(before).some((e) => /Permissions Violation/i.test(e) || /PERMISSIONS_VIOLATION/.test(e));
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
  // Council tasks: the agent's own durable queue (consumer member-agent on COUNCIL_TASKS, filtered on
  // its task subject) and its own answer subject; another member's queue and answers are refused.
  const ajsm = await agent.jetstreamManager();
  const memberConsumer = (id, extra = {}) => ({
    durable_name: `member-${id}`,
    filter_subject: `council.v1.tasks.${id}`,
    ack_policy: AckPolicy.Explicit,
    ...extra,
  });
  const refused = async (p) => {
    try {
      await p;
      return false;
    } catch (e) {
      return e.code === 'PERMISSIONS_VIOLATION';
    }
  };
  await js.publish('council.v1.tasks.agent', sc.encode('{"task":1}'));
  await js.publish('council.v1.tasks.m1', sc.encode('{"task":2}'));
  try {
    await ajsm.consumers.add('COUNCIL_TASKS', memberConsumer('agent'));
    await ajsm.consumers.info('COUNCIL_TASKS', 'member-agent');
    const m = await (await agent.jetstream().consumers.get('COUNCIL_TASKS', 'member-agent')).next({ expires: 2000 });
    if (!m || sc.decode(m.data) !== '{"task":1}') throw new Error('not its task');
    m.working();
    await m.ackAck();
    expect('agent: its own council task queue (create, info, next, ack)', true, true);
  } catch (e) {
    expect('agent: its own council task queue (' + e.message + ')', false, true);
  }
  svc.subscribe('council.v1.answers.*', { queue: 'q', callback: (_e, m) => m.respond(sc.encode('{"ok":true}')) });
  await svc.flush();
  expect('agent: request council.v1.answers.agent (its answers)', await tryReq(agent, 'council.v1.answers.agent'), true);
  expect("agent: request council.v1.answers.m1 (another member's answers)", await tryReq(agent, 'council.v1.answers.m1'), false);
  expect("agent: info of another member's consumer", !(await refused(ajsm.consumers.info('COUNCIL_TASKS', 'member-m1'))), false);
  expect("agent: create another member's consumer", !(await refused(ajsm.consumers.add('COUNCIL_TASKS', memberConsumer('m1')))), false);
  expect(
    "agent: pull from another member's consumer",
    !(await refused(agent.request('$JS.API.CONSUMER.MSG.NEXT.COUNCIL_TASKS.member-m1', sc.encode('{"batch":1}'), { timeout: 1000 }))),
    false,
  );
  expect(
    'agent: unfiltered consumer on COUNCIL_TASKS',
    !(await refused(ajsm.consumers.add('COUNCIL_TASKS', { ack_policy: AckPolicy.Explicit }))),
    false,
  );
  expect(
    'agent: its own consumer name without a filter (DURABLE.CREATE)',
    !(await refused(
      agent.request(
        '$JS.API.CONSUMER.DURABLE.CREATE.COUNCIL_TASKS.member-agent',
        sc.encode('{"stream_name":"COUNCIL_TASKS","config":{}}'),
        {
          timeout: 1000,
        },
      ),
    )),
    false,
  );
  expect("agent: subscribe council.v1.tasks.m1 (another member's tasks)", await trySub(agent, 'council.v1.tasks.m1'), false);
  expect('agent: subscribe _INBOX_agent.> (its own inbox)', await trySub(agent, '_INBOX_agent.>'), true);
  expect("agent: subscribe _INBOX.> (everyone's replies)", await trySub(agent, '_INBOX.>'), false);
  expect("agent: subscribe _INBOX_human.> (another user's inbox)", await trySub(agent, '_INBOX_human.>'), false);
  expect('agent: subscribe _INBOX_conclave-services.>', await trySub(agent, '_INBOX_conclave-services.>'), false);
  expect('services: subscribe _INBOX.>', await trySub(svc, '_INBOX.>'), false);
  // agent JS read on ACP_PROPOSALS, but not on the event log
  try {
    const ajs = agent.jetstream();
    const c = await ajs.consumers.get('ACP_PROPOSALS');
    await c.next({ expires: 1000 });
    expect('agent: ordered consumer on ACP_PROPOSALS', true, true);
  } catch (e) {
    expect('agent: ordered consumer on ACP_PROPOSALS (' + e.message + ')', false, true);
  }
  try {
    const ajs = agent.jetstream();
    const c = await ajs.consumers.get('CONCLAVE_EVENTS');
    await c.next({ expires: 1000 });
    expect('agent: consumer on CONCLAVE_EVENTS', true, false);
  } catch (e) {
    expect('agent: consumer on CONCLAVE_EVENTS', false, false);
  }

  const reader = await conn('reader', pw('CONCLAVE_READER_PASSWORD'));
  try {
    const rjsm = await reader.jetstreamManager({ checkAPI: false });
    // durable pull consumer, filtered by domain
    await rjsm.consumers.add('ACP_DECISIONS', {
      durable_name: 'downstream',
      ack_policy: AckPolicy.Explicit,
      filter_subject: 'acp.v1.decisions.risk',
    });
    const c = await reader.jetstream().consumers.get('ACP_DECISIONS', 'downstream');
    const m = await c.next({ expires: 2000 });
    if (!m) throw new Error('no message');
    await m.ackAck();
    expect('reader: durable pull consumer on ACP_DECISIONS, fetch + ack', true, true);
  } catch (e) {
    expect('reader: durable pull consumer on ACP_DECISIONS (' + e.message + ')', false, true);
  }
  try {
    const c = await reader.jetstream().consumers.get('ACP_DECISIONS');
    const m = await c.next({ expires: 2000 });
    expect('reader: ordered consumer on ACP_DECISIONS', !!m, true);
  } catch (e) {
    expect('reader: ordered consumer on ACP_DECISIONS (' + e.message + ')', false, true);
  }
  try {
    const c = await reader.jetstream().consumers.get('CONCLAVE_EVENTS');
    await c.next({ expires: 1000 });
    expect('reader: consumer on CONCLAVE_EVENTS', true, false);
  } catch (e) {
    expect('reader: consumer on CONCLAVE_EVENTS', false, false);
  }
  expect('reader: subscribe acp.v1.decisions.>', await trySub(reader, 'acp.v1.decisions.>'), true);
  expect('reader: subscribe _INBOX.>', await trySub(reader, '_INBOX.>'), false);
  expect('reader: request acp.v1.propose', await tryReq(reader, 'acp.v1.propose'), false);
  expect('reader: publish acp.v1.decisions.risk', await tryPub(reader, 'acp.v1.decisions.risk'), false);
  expect(
    'reader: publish $JS.API.CONSUMER.DELETE.ACP_DECISIONS.downstream',
    await tryPub(reader, '$JS.API.CONSUMER.DELETE.ACP_DECISIONS.downstream'),
    false,
  );

  const human = await conn('human', pw('CONCLAVE_HUMAN_PASSWORD'));
  expect('human: request acp.v1.resolve', await tryReq(human, 'acp.v1.resolve'), true);
  expect('human: request acp.v1.propose', await tryReq(human, 'acp.v1.propose'), false);
  expect('human: subscribe _INBOX.>', await trySub(human, '_INBOX.>'), false);
  expect('human: subscribe _INBOX_agent.>', await trySub(human, '_INBOX_agent.>'), false);
  try {
    const c = await human.jetstream().consumers.get('ACP_ESCALATIONS');
    const m = await c.next({ expires: 2000 });
    expect('human: ordered consumer on ACP_ESCALATIONS', !!m, true);
  } catch (e) {
    expect('human: ordered consumer on ACP_ESCALATIONS (' + e.message + ')', false, true);
  }

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
