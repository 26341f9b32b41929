import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { connect, NatsConnection } from 'nats';
import type { ServiceName } from './conclave-harness';
import { eventually } from './conclave-harness';
import {
  checkInvariants,
  CheckReport,
  describeReport,
  InvariantName,
  LoggedEvent,
  noViolations,
  readRun,
  RunRecord,
  runNamesOf,
  violationCounts,
} from './invariants';
import { LoadAgent, pool, ProposalOutcome, ProposalPlan } from './load-agent';
import { PrivateNatsServer, ServiceProcesses } from './processes';

/**
 * Fault scenarios: services as separate processes on a private nats-server, a mixed load of
 * agents that retry unanswered requests, faults injected at even points of the load by a
 * scenario's `fault` step, then the invariant checker. Sizes come from FAULTS_PROPOSALS and
 * FAULTS_KILLS (the long run, `npm run test:faults`), else the scenario's short defaults.
 */
export interface FaultSizes {
  proposals: number;
  kills: number;
}

export function faultSizes(short: FaultSizes): FaultSizes {
  const n = (v: string | undefined, d: number) => (v && Number(v) > 0 ? Math.floor(Number(v)) : d);
  return { proposals: n(process.env['FAULTS_PROPOSALS'], short.proposals), kills: n(process.env['FAULTS_KILLS'], short.kills) };
}

/** A jest timeout that grows with the sizes (the long run), never a bound on the behaviour. */
export function faultTimeoutMs(sizes: FaultSizes): number {
  return 120_000 + sizes.proposals * 60 + sizes.kills * (30_000 + Number(process.env['FAULTS_READY_TIMEOUT_MS'] ?? 0));
}

const DOMAIN = 'faults.test';
/** Quorum 3, met by the three responses (2 for, 1 against): resolved by the resolver. */
const quorum: ProposalPlan = {
  domain: DOMAIN,
  quorum: 3,
  responses: [
    { participant_id: 'voter-a', response_type: 'endorse' },
    { participant_id: 'voter-b', response_type: 'endorse' },
    { participant_id: 'voter-c', response_type: 'challenge' },
  ],
};
/** One response and a deadline: the sweeper must expire it. */
const timed: ProposalPlan = { ...quorum, responses: [quorum.responses[0]], expiresInMs: 3_000 };
/** Equal weights for and against at quorum: a tie, escalated, then routed by the escalation service. */
const tie: ProposalPlan = { ...quorum, quorum: 2, responses: [quorum.responses[0], quorum.responses[2]] };
const planOf = (i: number) => (i % 10 === 0 ? timed : i % 10 === 5 ? tie : quorum);
/** Routing for the ties (no ladder: one EscalationRouted each). */
export const FAULT_ROUTES = JSON.stringify([{ id: 'faults', domain_prefix: 'faults', assignees: ['human-oncall'] }]);

const TERMINAL = new Set(['ProposalResolved', 'ProposalExpired', 'ProposalEscalated']);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface FaultContext {
  svc: ServiceProcesses;
  /** The k-th fault (0-based) of `kills`. */
  index: number;
  /** Call for each process killed and each restarted; `outageMs` from the kill to ready again. */
  record(what: { kill?: boolean; restart?: boolean; outageMs?: number; note?: string }): void;
}

export interface FaultScenario {
  name: string;
  /** Processes to start, replicas by repeating a name. */
  services: ServiceName[];
  sizes: FaultSizes;
  inFlight?: number;
  /** One fault, at the (index+1)/(kills+1) point of the load. */
  fault(ctx: FaultContext): Promise<void>;
  /** After the load: e.g. restart what a scenario left down. */
  afterLoad?(svc: ServiceProcesses, record: FaultContext['record']): Promise<void>;
}

export interface FaultResult {
  scenario: string;
  proposals: number;
  accepted: number;
  undecided: string[];
  kills: number;
  restarts: number;
  violations: Record<InvariantName, number>;
  /** Longest from the event that made a decision due (quorum-meeting response, expires_at) to the decision. */
  maxDecisionDelayMs: number;
  /** Escalated proposals without an EscalationRouted (only judged when escalation runs). */
  unrouted: string[];
  auditHead: number;
  expectedChain: number;
  /** Services not running or not ready at the end, as `name:down`. */
  down: string[];
  notes: string[];
  /** A fault step that failed (e.g. a restarted process never ready), with its readiness and log tail. */
  faultErrors: string[];
  /** The services' error lines (a few per process), as they were before the processes went away. */
  logLines: string[];
  report: CheckReport;
  durationMs: number;
}

/** Runs one scenario on its own private nats-server; the server and the processes are disposed of afterwards. */
export async function runFaultScenario(scenario: FaultScenario): Promise<FaultResult> {
  const started = Date.now();
  const nats = new PrivateNatsServer();
  let svc: ServiceProcesses | undefined;
  let nc: NatsConnection | undefined;
  try {
    await nats.start();
    svc = new ServiceProcesses(nats.url, nats.dir, { CONCLAVE_ESCALATION_ROUTES: FAULT_ROUTES });
    await svc.start(...scenario.services);
    const conn = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    nc = conn;
    const result = await drive(scenario, svc, conn);
    result.durationMs = Date.now() - started;
    writeRow(result);
    // A process restarted while starting (a start watchdog exit) is worth reading even in a clean run.
    if (!isClean(result) || svc.crashRestarts.length > 0) keepLogs(result.scenario, svc, nats);
    return result;
  } finally {
    await svc?.stop().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await nats.dispose();
  }
}

async function drive(scenario: FaultScenario, svc: ServiceProcesses, conn: NatsConnection): Promise<FaultResult> {
  const { proposals, kills } = scenario.sizes;
  const agent = new LoadAgent(() => conn, { prefix: svc.prefix, timeoutMs: 2_000, retryForMs: 60_000 });
  let killed = 0;
  let restarted = 0;
  let longestOutage = 0;
  const notes: string[] = [];
  const record: FaultContext['record'] = (w) => {
    if (w.kill) killed++;
    if (w.restart) restarted++;
    if (w.outageMs !== undefined) longestOutage = Math.max(longestOutage, w.outageMs);
    if (w.note) notes.push(w.note);
  };

  let finished = 0;
  const load = pool(Array.from({ length: proposals }), scenario.inFlight ?? 32, async (_, i): Promise<ProposalOutcome> => {
    const o = await agent.post(planOf(i), i);
    finished++;
    return o;
  });
  // Faults at even points of the load; a failure in one still lets the load finish first.
  let faultError: unknown;
  for (let k = 0; k < kills && faultError === undefined; k++) {
    const at = Math.floor((proposals * (k + 1)) / (kills + 1));
    try {
      await eventually(async () => (finished >= at ? true : undefined), 120_000, `${at} proposals finished`);
      await scenario.fault({ svc, index: k, record });
    } catch (err) {
      faultError = err;
    }
  }
  const outcomes = await load;
  if (faultError === undefined && scenario.afterLoad) await scenario.afterLoad(svc, record).catch((err) => (faultError = err));
  const faultErrors: string[] = [];
  if (faultError !== undefined) {
    // A process that did not come back: what its readiness and its log said.
    faultErrors.push(String((faultError as Error).message ?? faultError));
    const last = svc.processes[svc.processes.length - 1];
    if (last)
      faultErrors.push(`${last.name} (latest process) /readyz: ${await svc.readiness(last)}; log tail: ${svc.logOf(last).slice(-1500)}`);
  }

  // A timed proposal's response may come after its deadline on a retry: refusing it is right.
  const accepted = outcomes
    .filter((o, i) => o.proposed && (planOf(i) === timed || o.responded === planOf(i).responses.length))
    .map((o) => o.proposal_id);
  const escalationRuns = scenario.services.includes('escalation');
  // A deadline that fell in an outage is met once the sweeper (or intake, or the log) is back:
  // the outage, a request caught by it waiting out its timeout (2 s), the timer queue's backoff (2 s).
  const expirySlackMs = longestOutage + 8_000;
  const names = runNamesOf(svc.env);
  const auditHead = async () => {
    const m = await conn.request(`${svc.prefix}.v1.audit.head`, encoder.encode('{}'), { timeout: 5_000 });
    return (JSON.parse(decoder.decode(m.data)) as { head: { seq: number } }).head.seq;
  };
  let run: RunRecord = { events: [], decisions: [], escalations: [] };
  let head = -1;
  let report = checkInvariants(run);
  const gaps = (r: RunRecord) => {
    const terminal = new Set(r.events.filter((e) => TERMINAL.has(e.event.type)).map((e) => e.id));
    const routed = new Set(r.events.filter((e) => e.event.type === 'EscalationRouted').map((e) => e.id));
    const escalated = [...new Set(r.events.filter((e) => e.event.type === 'ProposalEscalated').map((e) => e.id))];
    return {
      undecided: accepted.filter((id) => !terminal.has(id)),
      unrouted: escalationRuns ? escalated.filter((id) => !routed.has(id)) : [],
    };
  };
  const chainLength = (r: RunRecord) => r.events.length + (r.audit?.rejections.length ?? 0);
  await eventually(
    async () => {
      run = await readRun(conn, names, { audit: true });
      head = await auditHead().catch(() => -1);
      report = checkInvariants(run, { attempts: agent.attempts, expirySlackMs });
      const g = gaps(run);
      return g.undecided.length === 0 && g.unrouted.length === 0 && report.ok && head === chainLength(run) ? true : undefined;
    },
    60_000,
    'every accepted proposal decided, every escalation routed and every event audited',
  ).catch(() => undefined);

  const down: string[] = [];
  for (const p of svc.live()) if (!(await svc.ready(p))) down.push(`${p.name}:down`);
  for (const name of new Set(scenario.services)) {
    const want = scenario.services.filter((n) => n === name).length;
    const have = svc.live(name).length;
    if (have < want) down.push(...Array.from({ length: want - have }, () => `${name}:down`));
  }
  const { undecided, unrouted } = gaps(run);
  return {
    scenario: scenario.name,
    proposals,
    accepted: accepted.length,
    undecided,
    kills: killed,
    restarts: restarted,
    violations: violationCounts(report),
    maxDecisionDelayMs: maxDecisionDelay(run.events),
    unrouted,
    auditHead: head,
    expectedChain: chainLength(run),
    down,
    notes: [...notes, ...svc.crashRestarts.map((c) => `${c}; started again, as a kubelet would`)],
    faultErrors,
    logLines: svc.processes.flatMap((p) =>
      svc
        .logOf(p)
        .split('\n')
        .filter((l) => /ERROR|FATAL|WARN.*fail/i.test(l) && !/AUTHENTICATION IS OFF/.test(l))
        .slice(0, 5)
        .map((l) => `${p.name}: ${l.slice(0, 400)}`),
    ),
    report,
    durationMs: 0,
  };
}

/**
 * From the moment a decision became due to its terminal event: for a quorum resolution (or tie
 * escalation) the last response before it, for an expiry its expires_at.
 */
export function maxDecisionDelay(events: readonly LoggedEvent[]): number {
  let max = 0;
  const lastResponse = new Map<string, number>();
  const expiresAt = new Map<string, number>();
  const decided = new Set<string>();
  for (const { id, event } of events) {
    const at = Date.parse(event.occurred_at ?? '');
    if (event.type === 'ProposalSubmitted') {
      const exp = (event['data'] as { expires_at?: string | null } | undefined)?.expires_at;
      if (exp) expiresAt.set(id, Date.parse(exp));
    } else if (event.type === 'ResponseRecorded') lastResponse.set(id, at);
    else if (TERMINAL.has(event.type) && !decided.has(id)) {
      decided.add(id);
      const trigger = (event['data'] as { resolution?: { trigger?: string } } | undefined)?.resolution?.trigger;
      const due = trigger === 'timeout' ? expiresAt.get(id) : lastResponse.get(id);
      if (due !== undefined && Number.isFinite(at)) max = Math.max(max, at - due);
    }
  }
  return max;
}

/** What a failing scenario prints: the checker's report and the services' error lines. */
export function describeFault(r: FaultResult): string {
  return [
    `${r.scenario}: ${r.accepted} of ${r.proposals} accepted, ${r.undecided.length} undecided (first: ${r.undecided.slice(0, 5).join(', ')}), ` +
      `${r.unrouted.length} escalations unrouted (first: ${r.unrouted.slice(0, 5).join(', ')}); kills ${r.kills}, restarts ${r.restarts}; ` +
      `audit head ${r.auditHead}, expected ${r.expectedChain}; down: ${r.down.join(' ') || 'none'}`,
    ...r.notes,
    ...r.faultErrors,
    describeReport(r.report),
    'service log lines:',
    ...r.logLines,
  ].join('\n');
}

/** Rows for `npm run test:faults`'s table, one JSON file per scenario. */
export const FAULTS_REPORT_DIR = resolve(__dirname, '../../.data/faults');

function writeRow(r: FaultResult): void {
  try {
    mkdirSync(FAULTS_REPORT_DIR, { recursive: true });
    const { report: _report, ...row } = r;
    void _report;
    writeFileSync(join(FAULTS_REPORT_DIR, `${r.scenario}.json`), JSON.stringify(row, null, 2));
  } catch {
    // The table is a convenience; the test's assertions are the verdict.
  }
}

/** The scenario's verdict: everything accepted, decided, routed, audited, every invariant clean, every service ready. */
function isClean(r: FaultResult): boolean {
  return (
    r.report.ok &&
    !r.faultErrors.length &&
    !r.undecided.length &&
    !r.unrouted.length &&
    r.auditHead === r.expectedChain &&
    !r.down.length &&
    r.accepted === r.proposals
  );
}

/** A failed scenario's service and server logs, kept under .data/faults/<scenario>-logs. */
function keepLogs(scenario: string, svc: ServiceProcesses, nats: PrivateNatsServer): void {
  try {
    const dir = join(FAULTS_REPORT_DIR, `${scenario}-logs`);
    mkdirSync(dir, { recursive: true });
    for (const p of svc.processes) copyFileSync(p.logFile, join(dir, basename(p.logFile)));
    // Diagnostic reports of processes that never got ready (ServiceProcesses.diagnose).
    for (const f of readdirSync(svc.logDir)) if (f.startsWith('report.')) copyFileSync(join(svc.logDir, f), join(dir, f));
    writeFileSync(join(dir, 'nats-server.log'), nats.log());
  } catch {
    // best effort
  }
}

export function expectNothingLost(r: FaultResult): void {
  if (!isClean(r)) console.warn(describeFault(r));
  expect(r.faultErrors).toEqual([]);
  expect(r.accepted).toBe(r.proposals); // the agents' retries went through
  expect({ undecided: r.undecided.length, unrouted: r.unrouted.length, stuck: r.report.stuck.length }).toEqual({
    undecided: 0,
    unrouted: 0,
    stuck: 0,
  });
  expect(r.auditHead).toBe(r.expectedChain);
  expect(r.violations).toEqual(noViolations());
  expect(r.down).toEqual([]);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
