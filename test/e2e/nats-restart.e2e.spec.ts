import { ConclaveClient } from '@conclave/sdk';
import { connect, NatsConnection } from 'nats';
import { eventually } from '../support/conclave-harness';
import { checkInvariants, describeReport, noViolations, readRun, RunRecord, runNamesOf, violationCounts } from '../support/invariants';
import { LoadAgent, pool, ProposalOutcome, ProposalPlan } from '../support/load-agent';
import { PrivateNatsServer, ServiceProcesses } from '../support/processes';

/**
 * The NATS server stopped and restarted under load, on the same port and store directory, with
 * the services running as separate processes (as in production): the services must reconnect and
 * resume, the agents' retries must go through, and afterwards every proposal whose responses
 * were accepted is decided, every event is in the audit chain, and the invariant checker passes.
 * The server is one of the test's own; the shared one is never touched.
 */
const PROPOSALS = 1_200;
const IN_FLIGHT = 32;
const OUTAGE_MS = 4_000;

const plan: ProposalPlan = {
  domain: 'restart.test',
  quorum: 3,
  responses: [
    { participant_id: 'voter-a', response_type: 'endorse' },
    { participant_id: 'voter-b', response_type: 'endorse' },
    { participant_id: 'voter-c', response_type: 'challenge' },
  ],
};

/** Every tenth proposal gets one response and a deadline instead: the sweeper must expire it, across the outage too. */
const timed: ProposalPlan = {
  domain: 'restart.test',
  quorum: 3,
  responses: [{ participant_id: 'voter-a', response_type: 'endorse' }],
  expiresInMs: 3_000,
};
const isTimed = (i: number) => i % 10 === 0;
const TERMINAL = new Set(['ProposalResolved', 'ProposalExpired', 'ProposalEscalated']);

const decoder = new TextDecoder();

describe('NATS server restart under load: services reconnect and resume, nothing lost', () => {
  const nats = new PrivateNatsServer();
  let services: ServiceProcesses | undefined;
  let nc: NatsConnection | undefined;

  afterAll(async () => {
    await services?.stop().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await nats.dispose();
  });

  it(`given intake, resolver, sweeper and audit as processes on a private server, when it stops for ${OUTAGE_MS / 1000} s during ${PROPOSALS} proposals (3 concurrent responses each, or a deadline) and comes back, then every accepted proposal is decided once and every event audited, and a reader following the decisions across the outage reads them all`, async () => {
    // Given
    await nats.start();
    const svc = new ServiceProcesses(nats.url, nats.dir);
    services = svc;
    await svc.start('intake', 'resolver', 'sweeper', 'audit');
    const conn = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    nc = conn;
    const agent = new LoadAgent(() => conn, { prefix: svc.prefix, timeoutMs: 2_000, retryForMs: 45_000 });
    const auditHead = async () => {
      const m = await conn.request(`${svc.prefix}.v1.audit.head`, new TextEncoder().encode('{}'), { timeout: 5_000 });
      return (JSON.parse(decoder.decode(m.data)) as { head: { seq: number } }).head.seq;
    };

    // A downstream reader, durable, following the decision stream through the outage: a server
    // that stops and comes back is no deleted stream, and must not end its loop. What the server
    // had sent it when it stopped comes back after its ack wait (5 s here, 30 s by default).
    const reader = await ConclaveClient.connect({ nc: conn, prefix: svc.prefix, streamSuffix: runNamesOf(svc.env).streamSuffix });
    const stopReading = new AbortController();
    const readEvents = new Set<string>();
    const reading = (async () => {
      try {
        for await (const d of reader.decisions({ durable: 'restart-reader', from: 'all', ackWaitMs: 5_000, signal: stopReading.signal }))
          readEvents.add(d.event_id);
        return stopReading.signal.aborted ? 'stopped' : 'ended by itself';
      } catch (err) {
        return `ended: ${(err as Error).message}`;
      }
    })();

    // When the server stops a third of the way into the load, for the outage, and restarts
    let finished = 0;
    const load = pool(Array.from({ length: PROPOSALS }), IN_FLIGHT, async (_, i): Promise<ProposalOutcome> => {
      const o = await agent.post(isTimed(i) ? timed : plan, i);
      finished++;
      return o;
    });
    await eventually(async () => (finished >= PROPOSALS / 3 ? true : undefined), 60_000, 'a third of the load');
    const outageFrom = Date.now();
    await nats.stop();
    await new Promise((r) => setTimeout(r, OUTAGE_MS)); // the outage itself, not a wait for a result
    await nats.start();
    const outageTo = Date.now();
    const outcomes = await load;

    // Then (once the system settles, bounded) every accepted proposal is decided and audited
    // A timed proposal's response may come after its deadline on a retry; refusing it is right.
    const accepted = outcomes.filter((o, i) => o.proposed && (isTimed(i) || o.responded === 3)).map((o) => o.proposal_id);
    const names = runNamesOf(svc.env);
    let run: RunRecord = { events: [], decisions: [], escalations: [] };
    let head = -1;
    const settled = (r: RunRecord, h: number) => {
      const terminal = new Set(r.events.filter((e) => TERMINAL.has(e.event.type)).map((e) => e.id));
      const sources = r.events.length + (r.audit?.rejections.length ?? 0);
      // The chain as read in this same pass, not only the head asked for after it.
      return (
        accepted.every((id) => terminal.has(id)) &&
        r.decisions.length === terminal.size &&
        h === sources &&
        r.audit?.entries.length === sources
      );
    };
    await eventually(
      async () => {
        run = await readRun(conn, names, { audit: true });
        head = await auditHead().catch(() => -1);
        return settled(run, head) ? true : undefined;
      },
      30_000,
      'every accepted proposal decided and every event audited',
    ).catch(() => undefined);

    // A deadline that fell in the outage is met once the server is back: the outage, the server's
    // restart, an attempt caught by the outage waiting out its request timeout (5 s), the clients'
    // reconnect wait (2 s) and the timer queue's longest backoff (2 s).
    const report = checkInvariants(run, { attempts: agent.attempts, expirySlackMs: OUTAGE_MS + 11_000 });
    const terminal = new Set(run.events.filter((e) => TERMINAL.has(e.event.type)).map((e) => e.id));
    const undecided = accepted.filter((id) => !terminal.has(id));
    const alive = await Promise.all(
      svc.processes.map(async (p) => `${p.name}:${p.child.exitCode === null && (await svc.ready(p)) ? 'ready' : 'down'}`),
    );
    const expectedChain = run.events.length + (run.audit?.rejections.length ?? 0);
    if (!report.ok || undecided.length > 0 || head !== expectedChain) {
      const errors = svc.processes.flatMap((p) =>
        svc
          .logOf(p)
          .split('\n')
          .filter((l) => /ERROR|WARN.*fail|stopped/i.test(l) && !/AUTHENTICATION IS OFF/.test(l))
          .slice(0, 5)
          .map((l) => `${p.name}: ${l}`),
      );
      console.warn(
        `NATS restart: ${accepted.length} of ${PROPOSALS} accepted, ${undecided.length} of them undecided (first: ${undecided.slice(0, 5).join(', ')}); ` +
          `audit head ${head}, log events ${run.events.length} + rejections ${run.audit?.rejections.length ?? 0} = ${expectedChain}; ${alive.join(' ')}\n` +
          `${describeReport(report)}\nservice log lines:\n${errors.join('\n')}`,
      );
    }

    expect(accepted.length).toBe(PROPOSALS); // the agents' retries went through
    expect({ undecided: undecided.length, stuck: report.stuck.length }).toEqual({ undecided: 0, stuck: 0 });
    expect(head).toBe(expectedChain);
    expect(violationCounts(report)).toEqual(noViolations());
    expect(alive.filter((a) => a.endsWith(':down'))).toEqual([]);
    // The deadline check above was put to the test: some deadlines fell while the server was down,
    // and those proposals expired once it was back.
    const expired = new Set(run.events.filter((e) => e.event.type === 'ProposalExpired').map((e) => e.id));
    const expiredDuringOutage = run.events.filter((e) => {
      if (e.event.type !== 'ProposalSubmitted') return false;
      const at = Date.parse(String((e.event.data as { expires_at?: unknown }).expires_at));
      return at >= outageFrom && at <= outageTo && expired.has(e.id);
    });
    expect(expiredDuringOutage.length).toBeGreaterThan(0);

    // And the reader, still following, has read every decision event on the stream, each once.
    const published = new Set(run.decisions.map((m) => String(m.body['event_id'])));
    await eventually(async () => (readEvents.size >= published.size ? true : undefined), 30_000, 'the reader caught up').catch(
      () => undefined,
    );
    stopReading.abort();
    expect(await reading).toBe('stopped');
    expect([...published].filter((id) => !readEvents.has(id))).toEqual([]);
    expect(readEvents.size).toBe(published.size);
  }, 240_000);
});
