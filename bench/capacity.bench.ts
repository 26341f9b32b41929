/**
 * The capacity model (docs/capacity.md): per-unit figures measured on this machine, and a
 * simulation at 1/100 of the sizing target (10,000,000 pending proposals, 100,000 agents) that
 * checks the model's predictions. Everything runs on a private nats-server (free port, temporary
 * store, deleted at the end; never the shared one). Prints tables and writes every figure to
 * `.data/bench-capacity.json`. Never fails on time; fails only when the system loses or
 * duplicates work (counts that do not add up, the invariant checker).
 *
 *   npm run bench:capacity                                           # about 10 minutes on 2 cores
 *   CAPACITY_PENDING=20000 CAPACITY_AGENTS=200 CAPACITY_ESCALATIONS=1000 npm run bench:capacity   # a quick run
 *
 * A. Throughput, each service alone as a process (from its bundle, as test/support/processes.ts
 *    runs them): intake takes proposals (propose + 3 responses, CAPACITY_IN_FLIGHT at a time);
 *    then the sweeper, the escalation desk, the resolver and the audit each drain a backlog
 *    that was written to the log while they were stopped. CPU per unit (/proc), bytes per
 *    decided proposal in every stream, and the invariant checker over the whole run.
 * B. Council: runs of 5 scripted members that answer at once (3 rounds, as bench:council):
 *    log bytes, RSS and restart time per run (a process), heap per run (in this process, after GC).
 * C. The model and the simulation, on one log filled in stages: empty; + the agents registered
 *    (CAPACITY_AGENTS); + pending proposals; + open escalations (the calibration: proposals and
 *    escalations at 1/CAPACITY_CALIBRATION_DIVISOR of the simulation); then the simulation:
 *    CAPACITY_PENDING pending proposals from the agents over CAPACITY_DOMAINS domains, with
 *    CAPACITY_ESCALATIONS open escalations. At each stage: every service's heap when started in
 *    this process (forced GC before and after) and the bytes of every stream; at the agents-only,
 *    calibration and simulated stages also every service as a process (catch-up, restart to
 *    ready from its snapshot twice, RSS, its state's counts checked through /metrics). The
 *    simulated stage is predicted from the earlier stages only, printed beside what was measured.
 *
 * Env: CAPACITY_PENDING (100,000), CAPACITY_AGENTS (1,000), CAPACITY_DOMAINS (8),
 * CAPACITY_ESCALATIONS (3,000), CAPACITY_CALIBRATION_DIVISOR (10), CAPACITY_RESPONSES (1 per
 * pending proposal), CAPACITY_PAYLOAD_BYTES (200), CAPACITY_THROUGHPUT_PROPOSALS (2,000),
 * CAPACITY_BACKLOG (2,000 expiries, and as many escalations), CAPACITY_COUNCIL_RUNS (16),
 * CAPACITY_IN_FLIGHT (64), CAPACITY_SKIP (comma list of throughput, council, model),
 * CAPACITY_KEEP_LOGS=1 (keep the services' logs), NATS_SERVER_BIN. Run with --expose-gc (the npm
 * script does) for the heap figures.
 */
import 'reflect-metadata';
import {
  DEFAULT_DECIDER_CONFIG,
  evolveProposal,
  handleProposalCommand,
  initialProposalState,
  PROPOSAL_COMMAND_TYPES,
  ProposalCommand,
  ProposalState,
  proposalStream,
} from '@conclave/acp-protocol';
import { JetStreamEventLog, LogEvent, StreamVersion } from '@conclave/event-log';
import { acpStreamNames } from '@conclave/messaging';
import {
  decideRegistry,
  evolveParticipant,
  initialParticipantState,
  ParticipantState,
  participantStream,
  REGISTRY_COMMAND_TYPES,
  RegistryCommand,
} from '@conclave/registry-protocol';
import { ConclaveClient, CouncilClient } from '@conclave/sdk';
import { relentlessBehaviour, ScriptedMember, scriptedDescriptor, scriptedGoalContract } from '@conclave/sdk/testing';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { deserialize } from 'node:v8';
import { connect, NatsConnection } from 'nats';
import { monotonicFactory } from 'ulid';
import type { ConclaveHarness, Instance, ServiceName } from '../test/support/conclave-harness';
import type { CouncilDecisionCollector } from '../test/support/council-harness';
import { checkRun, describeReport, readRun, readStream, runNamesOf } from '../test/support/invariants';
import { pool } from '../test/support/load-agent';
import type { ServiceProcess, ServiceProcesses } from '../test/support/processes';
import { cpuMsOf, fmt, int, loadAverage, promValue, rssOf, sleep, streamUsage, StreamUsage } from './bench-util';

const PENDING = int('CAPACITY_PENDING', 100_000);
const AGENTS = int('CAPACITY_AGENTS', 1_000);
const DOMAINS = int('CAPACITY_DOMAINS', 8);
const ESCALATIONS = int('CAPACITY_ESCALATIONS', 3_000);
const DIVISOR = int('CAPACITY_CALIBRATION_DIVISOR', 10);
const RESPONSES = int('CAPACITY_RESPONSES', 1);
const PAYLOAD_BYTES = int('CAPACITY_PAYLOAD_BYTES', 200);
const THROUGHPUT_PROPOSALS = int('CAPACITY_THROUGHPUT_PROPOSALS', 2_000);
const BACKLOG = int('CAPACITY_BACKLOG', 2_000);
const COUNCIL_RUNS = int('CAPACITY_COUNCIL_RUNS', 16);
const IN_FLIGHT = int('CAPACITY_IN_FLIGHT', 64);
const SKIP = new Set((process.env['CAPACITY_SKIP'] ?? '').split(',').filter(Boolean));
/** The sizing target of docs/capacity.md; the simulation is a fraction of it. */
const TARGET = { pending: 10_000_000, agents: 100_000 };
const SERVICES: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'audit'];
/** Appends in flight while seeding the log. */
const SEED_IN_FLIGHT = 256;
/** A wait this long means work was lost (or the machine stopped): the run fails, naming it. */
const LOST_AFTER_MS = 15 * 60_000;
const AREAS = ['risk', 'ops', 'finance', 'pricing', 'security', 'legal', 'people', 'research'];

const agentId = (i: number) => `agent-${String(i).padStart(6, '0')}`;
const domainOf = (i: number) => `cap.${AREAS[(i % DOMAINS) % AREAS.length]}${i % DOMAINS >= AREAS.length ? i % DOMAINS : ''}`;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const MiB = 2 ** 20;
const filler = 'capacity model payload text, '.repeat(Math.ceil(PAYLOAD_BYTES / 29)).slice(0, PAYLOAD_BYTES);
const payload = (n: number) => ({ kind: 'capacity', n, text: filler });

const gc = (global as { gc?: () => void }).gc;
function collect(): void {
  for (let i = 0; i < 3; i++) gc?.();
}
const heapUsed = () => process.memoryUsage().heapUsed;
const decoder = new TextDecoder();

/** A pause until `test` holds; a wait past LOST_AFTER_MS is a failure of the system, named by `what`. */
async function until(test: () => Promise<boolean>, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + LOST_AFTER_MS;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${LOST_AFTER_MS / 60_000} minutes`);
    await sleep(everyMs);
  }
}

/** Until no stream grows for `quietMs`: outboxes, the desk and the audit chain have done what they had to. */
async function settle(nc: NatsConnection, quietMs = 1_500): Promise<StreamUsage> {
  let last = await streamUsage(nc);
  let since = Date.now();
  const sig = (u: StreamUsage) => [...u].map(([n, s]) => `${n}:${s.messages}`).join(',');
  for (;;) {
    await sleep(250);
    const now = await streamUsage(nc);
    if (sig(now) !== sig(last)) [last, since] = [now, Date.now()];
    else if (Date.now() - since >= quietMs) return now;
  }
}

async function text(url: string): Promise<string> {
  try {
    return await (await fetch(url)).text();
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------- seeding

/**
 * Writes proposals and participants into the event log as the services do: the JetStream
 * adapter's append with the expected version, events from the real deciders, many in flight.
 * Faster than through intake, whose own rate part A measures.
 */
class Seeder {
  private readonly id = monotonicFactory();
  commits = 0;
  events = 0;

  private constructor(private readonly log: JetStreamEventLog<LogEvent>) {}

  static async open(nc: NatsConnection, env: Record<string, string>): Promise<Seeder> {
    return new Seeder(
      await JetStreamEventLog.create<LogEvent>({
        connection: nc,
        streamName: env['CONCLAVE_EVENT_STREAM'],
        subjectPrefix: env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
      }),
    );
  }

  private async append(stream: string, events: readonly LogEvent[], expected: StreamVersion | 'no_stream'): Promise<StreamVersion> {
    const { version } = await this.log.append(stream, events, expected);
    this.commits++;
    this.events += events.length;
    return version;
  }

  /**
   * Proposals numbered from `first`, each submitted by an agent in one of the domains, with
   * `responses` responses by other agents, then escalated by its author when asked. Returns a
   * few of their ids (for spot checks), never all of them: this process's heap is measured.
   */
  async proposals(
    first: number,
    count: number,
    opts: { expiresAt: string | null; responses: number; escalate?: boolean },
  ): Promise<string[]> {
    const sample: string[] = [];
    const createdAt = new Date(Date.now() - 60_000).toISOString();
    await pool(range(count), SEED_IN_FLIGHT, async (k) => {
      const n = first + k;
      const proposalId = this.id();
      const author = agentId(n % AGENTS);
      let state: ProposalState = initialProposalState;
      let version: StreamVersion | 'no_stream' = 'no_stream';
      const run = async (command: Omit<ProposalCommand, 'command_id' | 'now'>) => {
        const full = { ...command, command_id: this.id(), now: new Date().toISOString() } as ProposalCommand;
        const { events } = handleProposalCommand(state, full, DEFAULT_DECIDER_CONFIG);
        for (const e of events) state = evolveProposal(state, e);
        version = await this.append(proposalStream(proposalId), events as unknown as LogEvent[], version);
      };
      await run({
        type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
        actor: author,
        data: {
          proposal_id: proposalId,
          type: 'proposal',
          domain: domainOf(n),
          author,
          payload: payload(n),
          quorum: 3,
          created_at: createdAt,
          expires_at: opts.expiresAt,
        },
      } as Omit<ProposalCommand, 'command_id' | 'now'>);
      for (let r = 0; r < opts.responses; r++) {
        const voter = agentId((n + 1 + r) % AGENTS);
        await run({
          type: PROPOSAL_COMMAND_TYPES.RecordResponse,
          actor: voter,
          data: {
            proposal_id: proposalId,
            participant_id: voter,
            response_type: r % 2 ? 'challenge' : 'endorse',
            confidence: 0.8,
            domain_authority: 0.7,
            trust_score: 0.9,
            reason: 'reviewed for the capacity model',
          },
        } as Omit<ProposalCommand, 'command_id' | 'now'>);
      }
      if (opts.escalate) {
        await run({
          type: PROPOSAL_COMMAND_TYPES.EscalateProposal,
          actor: author,
          data: { proposal_id: proposalId, reason: 'capacity model: a human decides', requested_by: author },
        } as Omit<ProposalCommand, 'command_id' | 'now'>);
      }
      if (k % Math.max(1, Math.floor(count / 8)) === 0) sample.push(proposalId);
    });
    return sample;
  }

  /** Agents numbered from `first` registered (an Ed25519 key, the agent role) with a grant on their domain. */
  async agents(first: number, count: number): Promise<void> {
    await pool(range(count), SEED_IN_FLIGHT, async (k) => {
      const n = first + k;
      const participant = agentId(n);
      let state: ParticipantState = initialParticipantState;
      let version: StreamVersion | 'no_stream' = 'no_stream';
      for (const command of [
        {
          type: REGISTRY_COMMAND_TYPES.RegisterParticipant,
          data: { participant_id: participant, roles: ['agent'], public_key: randomBytes(32).toString('base64url') },
        },
        {
          type: REGISTRY_COMMAND_TYPES.GrantDomain,
          data: { participant_id: participant, domain: domainOf(n), domain_authority: 0.7, trust_score: 0.9 },
        },
      ]) {
        const full = { ...command, command_id: this.id(), now: new Date().toISOString(), actor: 'capacity-admin' } as RegistryCommand;
        const events = decideRegistry(full, state);
        for (const e of events) state = evolveParticipant(state, e);
        version = await this.append(participantStream(participant), events as unknown as LogEvent[], version);
      }
    });
  }
}

// ------------------------------------------------------------------------------------ context

interface Context {
  url: string;
  logDir: string;
  natsPid: number | undefined;
  processes: typeof import('../test/support/processes');
  harness: typeof import('../test/support/conclave-harness');
  councilHarness: typeof import('../test/support/council-harness');
}

async function proposeWithResponses(client: ConclaveClient, n: number): Promise<void> {
  const author = agentId(((n % AGENTS) + AGENTS) % AGENTS);
  const voter = (k: number) => agentId((((n + k) % AGENTS) + AGENTS) % AGENTS);
  const p = await client.propose({
    domain: domainOf(Math.abs(n)),
    author,
    payload: payload(n),
    quorum: 3,
    created_at: new Date().toISOString(),
  });
  await client.endorse(p.proposal_id, { participant_id: voter(1), domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 });
  await client.endorse(p.proposal_id, { participant_id: voter(2), domain_authority: 0.7, confidence: 0.6, trust_score: 0.8 });
  await client.challenge(p.proposal_id, { participant_id: voter(3), domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 });
}

// ------------------------------------------------------------------------- A. throughput

interface Drain {
  units: number;
  perSecond: number;
  cpuMsPerUnit: number;
  natsCpuMsPerUnit: number;
  seconds: number;
}

/**
 * Starts `name` (stopped until now) and times how fast it works off its backlog: `count()`
 * reaches `base + units`. The rate is taken between the first progress seen and the end, so
 * the start itself does not count; CPU over the same window.
 */
async function drain(ctx: Context, sp: ServiceProcesses, name: ServiceName, units: number, count: () => Promise<number>): Promise<Drain> {
  const base = await count();
  const started = sp.add(name);
  const pidOf = () => sp.processes.filter((p) => p.name === name).at(-1)?.child.pid;
  type Point = { t: number; n: number; cpu: number; nats: number };
  const seen: { first?: Point; last?: Point } = {};
  await until(
    async () => {
      const n = await count();
      const point = { t: performance.now(), n, cpu: cpuMsOf(pidOf()), nats: cpuMsOf(ctx.natsPid) };
      if (!seen.first && n > base) seen.first = point;
      seen.last = point;
      return n >= base + units;
    },
    `${name}: ${fmt(units, 0)} units of backlog`,
    50,
  );
  await started;
  const a = seen.first as Point;
  const b = seen.last as Point;
  const seconds = Math.max(0.05, (b.t - a.t) / 1000);
  const done = Math.max(1, b.n - a.n);
  return {
    units,
    perSecond: done / seconds,
    cpuMsPerUnit: (b.cpu - a.cpu) / done,
    natsCpuMsPerUnit: (b.nats - a.nats) / done,
    seconds: (b.t - a.t) / 1000,
  };
}

interface ThroughputFigures {
  intake: {
    proposals: number;
    perSecond: number;
    commandsPerSecond: number;
    cpuMsPerProposal: number;
    natsCpuMsPerProposal: number;
    clientCpuMsPerProposal: number;
  };
  sweeper: Drain;
  escalation: Drain;
  resolver: Drain & { publishedPerSecond: number };
  audit: Drain;
  eventsPerDecidedProposal: number;
  bytesPerDecidedProposal: { eventLog: number; audit: number; decisions: number; proposals: number; total: number };
  bottleneck: { service: string; proposalsPerSecond: number };
  /** The slowest of the services that more replicas do not speed up (every replica follows the whole log, or one writer). */
  ceiling: { service: string; proposalsPerSecond: number };
  invariants: string;
}

async function partThroughput(ctx: Context): Promise<ThroughputFigures> {
  console.log(`\n## A. throughput: each service alone, as a process`);
  const sp = new ctx.processes.ServiceProcesses(ctx.url, ctx.logDir);
  const nc = await connect({ servers: ctx.url });
  const client = await ConclaveClient.connect({ nc, prefix: sp.prefix, streamSuffix: sp.run });
  const evt = sp.env['CONCLAVE_EVENT_STREAM'];
  const streams = acpStreamNames(sp.run);
  const messages = async (stream: string) => (await streamUsage(nc)).get(stream)?.messages ?? 0;
  try {
    // Intake: proposals with their three responses, IN_FLIGHT at a time, from the agents.
    await sp.start('intake');
    await pool(range(20), 20, (i) => proposeWithResponses(client, -1 - i));
    const intakePid = sp.live('intake')[0].child.pid;
    const u0 = await streamUsage(nc);
    const cpu0 = [cpuMsOf(intakePid), cpuMsOf(ctx.natsPid), cpuMsOf(process.pid)];
    const t0 = performance.now();
    await pool(range(THROUGHPUT_PROPOSALS), IN_FLIGHT, (i) => proposeWithResponses(client, i));
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = [cpuMsOf(intakePid), cpuMsOf(ctx.natsPid), cpuMsOf(process.pid)];
    const u1 = await streamUsage(nc);
    await sp.kill('intake', 'SIGTERM');
    const intake = {
      proposals: THROUGHPUT_PROPOSALS,
      perSecond: THROUGHPUT_PROPOSALS / seconds,
      commandsPerSecond: (4 * THROUGHPUT_PROPOSALS) / seconds,
      cpuMsPerProposal: (cpu1[0] - cpu0[0]) / THROUGHPUT_PROPOSALS,
      natsCpuMsPerProposal: (cpu1[1] - cpu0[1]) / THROUGHPUT_PROPOSALS,
      clientCpuMsPerProposal: (cpu1[2] - cpu0[2]) / THROUGHPUT_PROPOSALS,
    };
    console.log(
      `intake: ${fmt(intake.perSecond, 0)} proposals/s (${fmt(intake.commandsPerSecond, 0)} commands/s), CPU per proposal: intake ${fmt(intake.cpuMsPerProposal, 2)} ms, nats-server ${fmt(intake.natsCpuMsPerProposal, 2)} ms, agents (this process) ${fmt(intake.clientCpuMsPerProposal, 2)} ms`,
    );

    // Sweeper: proposals that fell due while it was stopped.
    const seeder = await Seeder.open(nc, sp.env);
    const due = Date.now() + 1_000;
    await seeder.proposals(0, BACKLOG, { expiresAt: new Date(due).toISOString(), responses: 0 });
    await sleep(Math.max(0, due - Date.now()));
    const sweeper = await drain(ctx, sp, 'sweeper', BACKLOG, () => messages(evt));
    await sp.kill('sweeper', 'SIGTERM');
    console.log(`sweeper: ${fmt(sweeper.perSecond, 0)} expiries/s, ${fmt(sweeper.cpuMsPerUnit, 2)} ms CPU each`);

    // Escalation desk: escalations it has not routed yet.
    await seeder.proposals(BACKLOG, BACKLOG, { expiresAt: null, responses: 0, escalate: true });
    const escalation = await drain(ctx, sp, 'escalation', BACKLOG, () => messages(evt));
    // Its notifier tells the assignees of each routing (ACP_ESCALATIONS) before it stops.
    await until(async () => (await messages(streams.escalations)) >= BACKLOG, 'escalation notifier: every routing published');
    await sp.kill('escalation', 'SIGTERM');
    console.log(`escalation: ${fmt(escalation.perSecond, 0)} escalations routed/s, ${fmt(escalation.cpuMsPerUnit, 2)} ms CPU each`);

    // Resolver: the resolutions of every proposal intake took, then its outbox publishing all.
    const decided = THROUGHPUT_PROPOSALS + 20;
    const beforeResolver = await streamUsage(nc);
    const published0 = Date.now();
    const resolved = await drain(ctx, sp, 'resolver', decided, () => messages(evt));
    const decisions = decided + 2 * BACKLOG;
    await until(
      async () => (await messages(streams.decisions)) >= decisions && (await messages(streams.escalations)) >= 2 * BACKLOG,
      'resolver outbox: every decision and escalation published',
    );
    const publishedPerSecond = decisions / ((Date.now() - published0) / 1000);
    const afterResolver = await settle(nc);
    await sp.kill('resolver', 'SIGTERM');
    console.log(
      `resolver: ${fmt(resolved.perSecond, 0)} decisions/s, ${fmt(resolved.cpuMsPerUnit, 2)} ms CPU each; outbox: ${fmt(decisions, 0)} decisions published in ${fmt(decisions / publishedPerSecond, 1)} s from its start`,
    );

    // Audit: one chain entry per event of the log.
    const names = runNamesOf(sp.env);
    const events = (await readRun(nc, names)).events.length;
    const audit = await drain(ctx, sp, 'audit', events, () => messages(`${evt}_AUDIT`));
    const afterAudit = await settle(nc);
    await sp.kill('audit', 'SIGTERM');
    console.log(`audit: ${fmt(audit.perSecond, 0)} entries/s, ${fmt(audit.cpuMsPerUnit, 2)} ms CPU each`);

    const report = await checkRun(nc, names, { audit: true, expirySlackMs: 3_600_000 });
    if (!report.ok) throw new Error(`the system misbehaved under load:\n${describeReport(report)}`);
    console.log(
      `invariant checker: ${fmt(report.counts.events, 0)} events, ${fmt(report.counts.decisionMessages, 0)} decisions, ${fmt(report.counts.auditEntries ?? 0, 0)} audit entries: no violation`,
    );

    const delta = (a: StreamUsage, b: StreamUsage, s: string) => (b.get(s)?.bytes ?? 0) - (a.get(s)?.bytes ?? 0);
    const perMessage = (u: StreamUsage, s: string) => (u.get(s)?.bytes ?? 0) / Math.max(1, u.get(s)?.messages ?? 0);
    const eventsPerDecidedProposal = 5; // submission, 3 responses, resolution: one event per commit
    const eventLog = delta(u0, u1, evt) / THROUGHPUT_PROPOSALS + delta(beforeResolver, afterResolver, evt) / decided;
    const bytes = {
      eventLog,
      audit: eventsPerDecidedProposal * perMessage(afterAudit, `${evt}_AUDIT`),
      decisions: perMessage(afterAudit, streams.decisions),
      proposals: perMessage(afterAudit, streams.proposals),
      total: 0,
    };
    bytes.total = bytes.eventLog + bytes.audit + bytes.decisions + bytes.proposals;
    // Per decided proposal, one replica each: intake's proposals, the resolver's decisions, the audit's entries / 5.
    const path = [
      { service: 'intake', proposalsPerSecond: intake.perSecond },
      { service: 'resolver', proposalsPerSecond: resolved.perSecond },
      { service: 'audit', proposalsPerSecond: audit.perSecond / eventsPerDecidedProposal },
    ];
    const slowest = (xs: typeof path) => xs.reduce((a, b) => (b.proposalsPerSecond < a.proposalsPerSecond ? b : a));
    const bottleneck = slowest(path);
    const ceiling = slowest(path.filter((x) => x.service !== 'intake'));
    return {
      intake,
      sweeper,
      escalation,
      resolver: { ...resolved, publishedPerSecond },
      audit,
      eventsPerDecidedProposal,
      bytesPerDecidedProposal: bytes,
      bottleneck,
      ceiling,
      invariants: `${report.counts.events} events, ${report.counts.decisionMessages} decisions, ${report.counts.auditEntries} audit entries, no violation`,
    };
  } finally {
    await client.close().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    await sp.stop();
  }
}

// ------------------------------------------------------------------------------- B. council

interface CouncilFigures {
  runs: number;
  runsPerSecond: number;
  tasksPerRun: number;
  eventLogBytesPerRun: number;
  decisionBytesPerRun: number;
  rssBytesPerRun: number;
  heapBytesPerRun: number;
  restartEmptyMs: number;
  restartMs: number;
}

const MEMBERS = ['cap-m1', 'cap-m2', 'cap-m3', 'cap-m4', 'cap-m5'];
const panel = () =>
  MEMBERS.map((id, i) =>
    scriptedDescriptor(
      id,
      ['builder', 'skeptic', 'operator', 'economist', 'security'][i],
      i === 0 ? ['proposer', 'reviewer', 'reviser', 'moderator', 'chair'] : undefined,
    ),
  );

async function councilRuns(client: CouncilClient, decisions: CouncilDecisionCollector, runs: number): Promise<number> {
  const t0 = performance.now();
  await pool(range(runs), 4, async () => {
    const runId = await client.start({
      goal_contract: scriptedGoalContract({ budget: { max_rounds: 3, max_time: '5m' } }),
      panel: panel(),
      policy: { stage_timeout_ms: 60_000, plateau_rounds: 5 },
    });
    await decisions.waitFor(runId, LOST_AFTER_MS);
  });
  return (performance.now() - t0) / 1000;
}

function forgetMemberRecords(members: ScriptedMember[]): void {
  // Scripted members keep every task they saw; a member is not the council service.
  for (const m of members) {
    m.tasks.length = 0;
    m.verdicts.length = 0;
    m.cancels.length = 0;
    m.requests.clear();
    m.aborted.clear();
  }
}

async function partCouncil(ctx: Context): Promise<CouncilFigures> {
  console.log(`\n## B. council: ${COUNCIL_RUNS} runs, 5 members answering at once, 3 rounds`);
  const f = { runs: COUNCIL_RUNS } as CouncilFigures;
  const { CouncilDecisionCollector } = ctx.councilHarness;
  // As a process: log bytes, RSS and restart time per run.
  {
    const sp = new ctx.processes.ServiceProcesses(ctx.url, ctx.logDir);
    const nc = await connect({ servers: ctx.url });
    const prefix = sp.env['CONCLAVE_COUNCIL_PREFIX'];
    const members: ScriptedMember[] = [];
    try {
      await sp.start('council');
      members.push(...MEMBERS.map((id) => new ScriptedMember(nc, id, relentlessBehaviour(), prefix).start()));
      await sp.kill('council', 'SIGTERM');
      let t0 = performance.now();
      await sp.add('council');
      f.restartEmptyMs = performance.now() - t0;
      const streams = acpStreamNames(sp.run);
      // The collector needs only a connection of the harness.
      const decisions = await CouncilDecisionCollector.open({ nc } as ConclaveHarness, streams.councilDecisions);
      const client = new CouncilClient(nc, prefix);
      await councilRuns(client, decisions, 1);
      await sleep(1_000);
      const pid = sp.live('council')[0].child.pid;
      const rss0 = rssOf(pid).rss;
      const u0 = await streamUsage(nc);
      const tasks0 = members.reduce((s, m) => s + m.tasks.length, 0);
      const seconds = await councilRuns(client, decisions, COUNCIL_RUNS);
      const u1 = await settle(nc);
      const rss1 = rssOf(pid).rss;
      f.runsPerSecond = COUNCIL_RUNS / seconds;
      f.tasksPerRun = (members.reduce((s, m) => s + m.tasks.length, 0) - tasks0) / COUNCIL_RUNS;
      const delta = (s: string) => ((u1.get(s)?.bytes ?? 0) - (u0.get(s)?.bytes ?? 0)) / COUNCIL_RUNS;
      f.eventLogBytesPerRun = delta(sp.env['CONCLAVE_EVENT_STREAM']);
      f.decisionBytesPerRun = delta(streams.councilDecisions);
      f.rssBytesPerRun = ((rss1 - rss0) * MiB) / COUNCIL_RUNS;
      await decisions.close();
      await sp.kill('council', 'SIGTERM');
      t0 = performance.now();
      await sp.add('council');
      f.restartMs = performance.now() - t0;
    } finally {
      await Promise.all(members.map((m) => m.stop()));
      await nc.drain().catch(() => undefined);
      await sp.stop();
    }
  }
  // In this process, after a forced GC: heap per run the council service keeps.
  {
    const h = new ctx.harness.ConclaveHarness({ LOG_LEVEL: 'error' });
    await h.start('council');
    const prefix = h.env['CONCLAVE_COUNCIL_PREFIX'];
    const members = MEMBERS.map((id) => new ScriptedMember(h.nc, id, relentlessBehaviour(), prefix).start());
    const decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
    try {
      const client = new CouncilClient(h.nc, prefix);
      await councilRuns(client, decisions, 2);
      forgetMemberRecords(members);
      decisions.received.length = 0;
      collect();
      const before = heapUsed();
      await councilRuns(client, decisions, COUNCIL_RUNS);
      await settle(h.nc);
      forgetMemberRecords(members);
      decisions.received.length = 0;
      collect();
      f.heapBytesPerRun = (heapUsed() - before) / COUNCIL_RUNS;
    } finally {
      await Promise.all(members.map((m) => m.stop()));
      await decisions.close();
      await h.kill(h.instances[0]).catch(() => undefined);
      await h.stop().catch(() => undefined);
    }
  }
  console.log(
    `council: ${fmt(f.runsPerSecond, 2)} runs/s (${fmt(f.tasksPerRun, 0)} tasks each); per run: event log ${fmt(f.eventLogBytesPerRun / 1024, 1)} KiB, decision ${fmt(f.decisionBytesPerRun / 1024, 1)} KiB, heap ${fmt(f.heapBytesPerRun / 1024, 1)} KiB, RSS ${fmt(f.rssBytesPerRun / 1024, 1)} KiB; restart ${fmt(f.restartEmptyMs / 1000, 2)} s empty, ${fmt(f.restartMs / 1000, 2)} s after ${COUNCIL_RUNS + 1} runs`,
  );
  return f;
}

// -------------------------------------------------------------------- C. model + simulation

interface Units {
  pending: number;
  escalations: number;
  agents: number;
}

interface ProcessFigures {
  /** Five services started together after the stage was seeded: catch-up from the previous snapshots, in parallel. */
  catchUpMs: number;
  /** Processes that exited while starting and were started again, as an orchestrator restarts them. */
  crashes: string[];
  /** The faster of two restarts to ready, from the snapshots. */
  restartMs: Record<string, number>;
  restartRunsMs: Record<string, number[]>;
  rssMiB: Record<string, number>;
  /** Heap in use as the service's /metrics reports it (no forced GC: indicative only). */
  heapMetricMiB: Record<string, number>;
  snapshotBytes: Record<string, number>;
  /**
   * What each service reads and decodes at a restart, timed in this process with no service
   * running (the faster of three): its snapshots (object store, V8 deserialize) and, for the
   * audit, its whole chain. The part of a restart that grows with the state.
   */
  stateLoadMs: Record<string, number>;
}

interface Stage {
  name: string;
  units: Units;
  /** Heap kept by each service started in this process, after forced GC (bytes). */
  heap: Record<string, number>;
  /**
   * The same after the first start of the stage, which followed the stage's new events live
   * (and saved the snapshot the measured start restores): what a service that has been running
   * all along holds. Only at the stages without processes.
   */
  heapLive: Record<string, number>;
  inProcessStartMs: Record<string, number>;
  /** Bytes per stream group: event log, audit chain, consumer streams (ACP_*), snapshots, other. */
  bytes: Record<string, number>;
  seedSeconds: number;
  processes?: ProcessFigures;
}

function groupBytes(u: StreamUsage, evt: string): Record<string, number> {
  const out: Record<string, number> = { 'event log': 0, 'audit chain': 0, 'consumer streams': 0, snapshots: 0, other: 0 };
  for (const [name, s] of u) {
    const group =
      name === evt
        ? 'event log'
        : name === `${evt}_AUDIT`
          ? 'audit chain'
          : name.startsWith('ACP_')
            ? 'consumer streams'
            : name.startsWith('OBJ_')
              ? 'snapshots'
              : 'other';
    out[group] += s.bytes;
  }
  return out;
}

/** What each service's /metrics must show at a stage: nothing lost, nothing counted twice. */
function countProblems(name: string, metrics: string, units: Units): string[] {
  const expect = (what: string, value: number | undefined, wanted: number) =>
    value === wanted ? [] : [`${name}: ${what} is ${value}, expected ${wanted}`];
  switch (name) {
    case 'resolver':
      return expect('conclave_acp_pending_proposals', promValue(metrics, 'conclave_acp_pending_proposals'), units.pending);
    case 'sweeper':
      return expect('sweeper deadlines', promValue(metrics, 'conclave_timer_queue_items', { queue: 'sweeper' }), units.pending);
    case 'escalation':
      return expect('conclave_escalation_open_escalations', promValue(metrics, 'conclave_escalation_open_escalations'), units.escalations);
    case 'audit':
      return expect('audit lag', promValue(metrics, 'conclave_reactor_lag_events', { reactor: 'audit' }), 0);
    default:
      return [];
  }
}

async function snapshotSizes(nc: NatsConnection, evt: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const os = await nc.jetstream().views.os(`${evt}_SNAPSHOTS`);
    for (const info of await os.list()) out[info.name] = info.size;
  } catch {
    // No snapshot yet.
  }
  return out;
}

async function stateLoadMs(nc: NatsConnection, evt: string, service: string): Promise<number> {
  const os = await nc.jetstream().views.os(`${evt}_SNAPSHOTS`);
  const t0 = performance.now();
  for (const info of await os.list()) {
    if (snapshotOwner(info.name) !== service) continue;
    const bytes = await os.getBlob(info.name);
    if (bytes) deserialize(bytes);
  }
  if (service === 'audit') for (const m of await readStream(nc, `${evt}_AUDIT`)) JSON.parse(decoder.decode(m.data));
  return performance.now() - t0;
}

function portOf(instance: Instance): number {
  return (instance.app.getHttpServer().address() as { port: number }).port;
}

/** Starts `name` in this process and waits for /readyz; the heap it keeps (forced GC before and after). */
async function inProcess(
  h: ConclaveHarness,
  name: ServiceName,
  settleFirst = false,
): Promise<{ heap: number; ms: number; metrics: string }> {
  collect();
  const before = heapUsed();
  const t0 = performance.now();
  const instance = await h.add(name);
  const port = portOf(instance);
  await until(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok === true, `${name} ready in process`);
  const ms = performance.now() - t0;
  // A start that catches up also routes, publishes and chains: let that finish before the stop.
  if (settleFirst) await settle(h.nc);
  const metrics = await text(`http://127.0.0.1:${port}/metrics`);
  collect();
  const heap = heapUsed() - before;
  await h.kill(instance);
  return { heap, ms, metrics };
}

/**
 * Starts `name` and waits until it is ready; a process that exits while starting is started
 * again, up to four times, as Kubernetes restarts a crashed container. Each such exit is
 * recorded with the last line of its log: it is a finding, not a lost proposal.
 */
async function startRestarting(sp: ServiceProcesses, name: ServiceName, crashes: string[]): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await sp.add(name);
    } catch (err) {
      const last = sp.processes.filter((p) => p.name === name).at(-1);
      if (!last || last.child.exitCode === null || attempt >= 5) throw err;
      const line = sp.logOf(last).trim().split('\n').at(-1) ?? '';
      crashes.push(`${name} exited with ${last.child.exitCode} while starting: ${line.slice(0, 300)}`);
      console.log(`WARNING: ${crashes[crashes.length - 1]}; started again, as an orchestrator would`);
    }
  }
}

/** Every service as a process: catch up together, then each restarted alone from its snapshot. */
async function asProcesses(ctx: Context, sp: ServiceProcesses, nc: NatsConnection, units: Units): Promise<ProcessFigures> {
  const problems: string[] = [];
  const t0 = performance.now();
  const crashes: string[] = [];
  await Promise.all(SERVICES.map((name) => startRestarting(sp, name, crashes)));
  const catchUpMs = performance.now() - t0;
  await settle(nc, 2_000);
  for (const p of sp.live()) {
    await until(
      async () => countProblems(p.name, await text(`http://127.0.0.1:${p.port}/metrics`), units).length === 0,
      `${p.name}: its state after catching up`,
      500,
    ).catch(async (err: Error) =>
      problems.push(err.message, ...countProblems(p.name, await text(`http://127.0.0.1:${p.port}/metrics`), units)),
    );
  }
  await sp.stop();
  const f: ProcessFigures = {
    catchUpMs,
    crashes,
    restartMs: {},
    restartRunsMs: {},
    rssMiB: {},
    heapMetricMiB: {},
    snapshotBytes: await snapshotSizes(nc, sp.env['CONCLAVE_EVENT_STREAM']),
    stateLoadMs: {},
  };
  for (const name of SERVICES) {
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) runs.push(await stateLoadMs(nc, sp.env['CONCLAVE_EVENT_STREAM'], name));
    f.stateLoadMs[name] = Math.min(...runs);
  }
  // Twice each, the faster kept: one restart alone moves by seconds on a shared machine.
  for (const name of SERVICES) {
    f.restartRunsMs[name] = [];
    for (let round = 0; round < 2; round++) {
      const t = performance.now();
      const p: ServiceProcess = await startRestarting(sp, name, crashes);
      f.restartRunsMs[name].push(performance.now() - t);
      await sleep(1_000);
      f.rssMiB[name] = rssOf(p.child.pid).rss;
      const metrics = await text(`http://127.0.0.1:${p.port}/metrics`);
      f.heapMetricMiB[name] = (promValue(metrics, 'nodejs_heap_size_used_bytes') ?? NaN) / MiB;
      problems.push(...countProblems(name, metrics, units).map((m) => `after a restart from the snapshot: ${m}`));
      await sp.kill(name, 'SIGTERM', 60_000);
    }
    f.restartMs[name] = Math.min(...f.restartRunsMs[name]);
  }
  // Exits the harness itself restarted (one process added at a time).
  crashes.push(...sp.crashRestarts.splice(0));
  if (problems.length) throw new Error(`the services' state does not match the log:\n${problems.join('\n')}`);
  return f;
}

interface ModelFigures {
  stages: Stage[];
  perUnit: Record<string, { heapPerPending: number; heapLivePerPending: number; heapPerEscalation: number; heapPerAgent: number }>;
  bytesPerUnit: Record<string, { pending: number; escalation: number; agent: number }>;
  snapshotBytesPerUnit: Record<string, number>;
  checks: Array<{ figure: string; predicted: number; measured: number; unit: string }>;
}

async function partModel(ctx: Context): Promise<ModelFigures> {
  // Agents do not grow with the pending proposals here (1,000 at the simulated size, as at 1/100
  // of the target's 100,000): all of them are registered first, and the calibration and the
  // simulation differ by their proposals and escalations only.
  const cal: Units = { pending: Math.round(PENDING / DIVISOR), escalations: Math.round(ESCALATIONS / DIVISOR), agents: AGENTS };
  const sim: Units = { pending: PENDING, escalations: ESCALATIONS, agents: AGENTS };
  console.log(
    `\n## C. the model (calibration at 1/${DIVISOR}: ${fmt(cal.pending, 0)} pending, ${fmt(cal.escalations, 0)} escalations) and the simulation (${fmt(sim.pending, 0)} pending from ${fmt(sim.agents, 0)} agents over ${DOMAINS} domains, ${fmt(sim.escalations, 0)} open escalations)`,
  );
  const sp = new ctx.processes.ServiceProcesses(ctx.url, ctx.logDir);
  const evt = sp.env['CONCLAVE_EVENT_STREAM'];
  const nc = await connect({ servers: ctx.url });
  // In-process services on the same names as the processes (never at the same time as them).
  const h = new ctx.harness.ConclaveHarness({ ...sp.env, LOG_LEVEL: 'error' });
  await h.start();
  const seeder = await Seeder.open(nc, sp.env);
  const stages: Stage[] = [];
  const have: Units = { pending: 0, escalations: 0, agents: 0 };
  const far = new Date(Date.now() + 7 * 24 * 3_600_000).toISOString();

  const stage = async (name: string, want: Units, opts: { processes: boolean; warm: boolean }): Promise<Stage> => {
    const t0 = performance.now();
    if (want.agents > have.agents) await seeder.agents(have.agents, want.agents - have.agents);
    if (want.escalations > have.escalations) {
      await seeder.proposals(PENDING + have.escalations, want.escalations - have.escalations, {
        expiresAt: null,
        responses: RESPONSES,
        escalate: true,
      });
    }
    if (want.pending > have.pending)
      await seeder.proposals(have.pending, want.pending - have.pending, { expiresAt: far, responses: RESPONSES });
    Object.assign(have, want);
    const seedSeconds = (performance.now() - t0) / 1000;
    const s: Stage = { name, units: { ...want }, heap: {}, heapLive: {}, inProcessStartMs: {}, bytes: {}, seedSeconds };
    if (opts.processes) s.processes = await asProcesses(ctx, sp, nc, want);
    for (const service of SERVICES) {
      // A first start catches up and saves a snapshot on stop (the processes did it already), so
      // the measured start restores one, as a restart does.
      if (opts.warm) s.heapLive[service] = (await inProcess(h, service, true)).heap;
      const r = await inProcess(h, service);
      s.heap[service] = r.heap;
      s.inProcessStartMs[service] = r.ms;
      const problems = countProblems(service, r.metrics, want);
      if (problems.length) throw new Error(`the services' state does not match the log:\n${problems.join('\n')}`);
    }
    s.bytes = groupBytes(await settle(nc), evt);
    console.log(
      `${name.padEnd(28)} seeded in ${fmt(seedSeconds, 1)} s; heap kept (MiB): ${SERVICES.map((x) => `${x} ${fmt(s.heap[x] / MiB, 2)}`).join(', ')}` +
        (s.processes
          ? `; restart to ready (s): ${SERVICES.map((x) => `${x} ${fmt((s.processes?.restartMs[x] ?? NaN) / 1000, 2)}`).join(', ')}; RSS (MiB): ${SERVICES.map((x) => `${x} ${fmt(s.processes?.rssMiB[x] ?? NaN, 0)}`).join(', ')}`
          : ''),
    );
    stages.push(s);
    return s;
  };

  try {
    const s0 = await stage('empty log', { pending: 0, escalations: 0, agents: 0 }, { processes: false, warm: true });
    const s1 = await stage('+ agents', { pending: 0, escalations: 0, agents: AGENTS }, { processes: true, warm: false });
    const s2 = await stage(
      '+ pending proposals',
      { pending: cal.pending, escalations: 0, agents: AGENTS },
      { processes: false, warm: true },
    );
    const s3 = await stage(`+ escalations = calibration (1/${DIVISOR})`, cal, { processes: true, warm: false });
    const s4 = await stage('simulation', sim, { processes: true, warm: false });

    const per = (a: number, b: number, n: number) => (b - a) / Math.max(1, n);
    const perUnit: ModelFigures['perUnit'] = {};
    for (const x of SERVICES) {
      perUnit[x] = {
        heapPerAgent: per(s0.heap[x], s1.heap[x], AGENTS),
        heapPerPending: per(s1.heap[x], s2.heap[x], cal.pending),
        heapLivePerPending: per(s1.heap[x], s2.heapLive[x], cal.pending),
        heapPerEscalation: per(s2.heap[x], s3.heap[x], cal.escalations),
      };
    }
    const bytesPerUnit: ModelFigures['bytesPerUnit'] = {};
    for (const g of Object.keys(s0.bytes)) {
      bytesPerUnit[g] = {
        agent: per(s0.bytes[g], s1.bytes[g], AGENTS),
        pending: per(s1.bytes[g], s2.bytes[g], cal.pending),
        escalation: per(s2.bytes[g], s3.bytes[g], cal.escalations),
      };
    }
    // Restart, RSS and snapshots: linear from the agents-only stage through the calibration,
    // whose proposals and escalations are 1/DIVISOR of the simulation's.
    const base = s1.processes as ProcessFigures;
    const calibrated = s3.processes as ProcessFigures;
    const linear = (v1: number, v3: number) => v1 + (v3 - v1) * DIVISOR;
    const snapshotBytesPerUnit = Object.fromEntries(
      Object.keys(calibrated.snapshotBytes).map((k) => [k, per(base.snapshotBytes[k] ?? 0, calibrated.snapshotBytes[k], cal.pending)]),
    );

    // The predictions for the simulated stage, from the earlier stages only.
    const checks: ModelFigures['checks'] = [];
    for (const x of SERVICES) {
      const u = perUnit[x];
      checks.push({
        figure: `${x}: heap kept`,
        predicted: s0.heap[x] + AGENTS * u.heapPerAgent + sim.pending * u.heapPerPending + sim.escalations * u.heapPerEscalation,
        measured: s4.heap[x],
        unit: 'MiB',
      });
    }
    for (const x of SERVICES) {
      checks.push({
        figure: `${x}: RSS at ready`,
        predicted: linear(base.rssMiB[x], calibrated.rssMiB[x]) * MiB,
        measured: (s4.processes?.rssMiB[x] ?? NaN) * MiB,
        unit: 'MiB',
      });
    }
    // A restart grows with what it reads and decodes: the calibration's increment of that (timed
    // alone, in this process) scaled up, on top of the agents-only restart. The restart times
    // themselves differ by less than their noise between those two stages.
    for (const x of SERVICES) {
      checks.push({
        figure: `${x}: restart to ready`,
        predicted: linear(base.stateLoadMs[x], calibrated.stateLoadMs[x]) - base.stateLoadMs[x] + base.restartMs[x],
        measured: s4.processes?.restartMs[x] ?? NaN,
        unit: 's',
      });
    }
    for (const x of SERVICES) {
      checks.push({
        figure: `${x}: state read at a restart`,
        predicted: linear(base.stateLoadMs[x], calibrated.stateLoadMs[x]),
        measured: s4.processes?.stateLoadMs[x] ?? NaN,
        unit: 's',
      });
    }
    for (const g of ['event log', 'audit chain', 'consumer streams']) {
      const b = bytesPerUnit[g];
      checks.push({
        figure: `${g}: bytes`,
        predicted: s0.bytes[g] + AGENTS * b.agent + sim.pending * b.pending + sim.escalations * b.escalation,
        measured: s4.bytes[g],
        unit: 'MiB',
      });
    }
    for (const k of Object.keys(snapshotBytesPerUnit)) {
      checks.push({
        figure: `snapshot ${k}`,
        predicted: linear(base.snapshotBytes[k] ?? 0, calibrated.snapshotBytes[k]),
        measured: s4.processes?.snapshotBytes[k] ?? NaN,
        unit: 'MiB',
      });
    }
    return { stages, perUnit, bytesPerUnit, snapshotBytesPerUnit, checks };
  } finally {
    for (const i of [...h.instances]) await h.kill(i).catch(() => undefined);
    await h.nc.drain().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    await sp.stop();
  }
}

// ---------------------------------------------------------------------------------- report

function table(headers: string[], rows: Array<Array<string | number>>): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c, 2) : c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: Array<string | number>) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  console.log(line(headers));
  console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
  for (const r of cells) console.log(line(r));
}

const inUnit = (v: number, unit: string) => (unit === 'MiB' ? v / MiB : unit === 's' ? v / 1000 : v);

function printModel(m: ModelFigures, t: ThroughputFigures | undefined, c: CouncilFigures | undefined): void {
  console.log(
    `\n### stages (heap kept in MiB, each service started in this process after forced GC; restart to ready in s and RSS in MiB, as processes)`,
  );
  table(
    ['stage', 'pending', 'escalations', 'agents', 'seeded in', ...SERVICES.map((x) => `${x} heap`)],
    m.stages.map((s) => [
      s.name,
      fmt(s.units.pending, 0),
      fmt(s.units.escalations, 0),
      fmt(s.units.agents, 0),
      `${fmt(s.seedSeconds, 1)} s`,
      ...SERVICES.map((x) => fmt(s.heap[x] / MiB, 2)),
    ]),
  );
  table(
    ['stage', 'catch-up (5 in parallel)', ...SERVICES.map((x) => `${x} restart`), ...SERVICES.map((x) => `${x} RSS`)],
    m.stages
      .filter((s) => s.processes)
      .map((s) => {
        const p = s.processes as ProcessFigures;
        return [
          s.name,
          `${fmt(p.catchUpMs / 1000, 1)} s`,
          ...SERVICES.map((x) => `${fmt(p.restartMs[x] / 1000, 2)} s`),
          ...SERVICES.map((x) => fmt(p.rssMiB[x], 0)),
        ];
      }),
  );
  table(
    ['stage', ...SERVICES.map((x) => `${x} state read`)],
    m.stages
      .filter((s) => s.processes)
      .map((s) => [s.name, ...SERVICES.map((x) => `${fmt((s.processes as ProcessFigures).stateLoadMs[x] / 1000, 2)} s`)]),
  );
  for (const s of m.stages) for (const c of s.processes?.crashes ?? []) console.log(`${s.name}: ${c} (started again)`);
  console.log(`\n### memory kept per unit (heap, bytes; each service started in this process, forced GC)`);
  table(
    ['service', 'per pending proposal (restarted)', 'per pending proposal (live)', 'per open escalation', 'per registered agent'],
    SERVICES.map((x) => [
      x,
      fmt(m.perUnit[x].heapPerPending, 0),
      fmt(m.perUnit[x].heapLivePerPending, 0),
      fmt(m.perUnit[x].heapPerEscalation, 0),
      fmt(m.perUnit[x].heapPerAgent, 0),
    ]),
  );
  if (c)
    console.log(
      `council: ${fmt(c.heapBytesPerRun, 0)} B of heap per finished run kept (in process), ${fmt(c.rssBytesPerRun, 0)} B of RSS per run (process)`,
    );
  console.log(`\n### JetStream bytes per unit (stream info)`);
  table(
    ['streams', 'per pending proposal', 'per open escalation', 'per registered agent'],
    Object.entries(m.bytesPerUnit).map(([g, b]) => [g, fmt(b.pending, 0), fmt(b.escalation, 0), fmt(b.agent, 0)]),
  );
  if (t) {
    const b = t.bytesPerDecidedProposal;
    console.log(
      `per decided proposal (part A): event log ${fmt(b.eventLog, 0)} B, audit chain ${fmt(b.audit, 0)} B, ACP_DECISIONS ${fmt(b.decisions, 0)} B, ACP_PROPOSALS ${fmt(b.proposals, 0)} B: ${fmt(b.total, 0)} B in all`,
    );
  }
  if (c) console.log(`per council run: event log ${fmt(c.eventLogBytesPerRun, 0)} B, COUNCIL_DECISIONS ${fmt(c.decisionBytesPerRun, 0)} B`);
  console.log(
    `snapshot bytes per pending proposal: ${Object.entries(m.snapshotBytesPerUnit)
      .map(([k, v]) => `${k} ${fmt(v, 0)}`)
      .join(', ')}`,
  );

  console.log(
    `\n### the 1/${fmt(TARGET.pending / PENDING, 0)} check: the simulated stage, predicted from the earlier stages, and measured`,
  );
  table(
    ['figure', 'predicted', 'measured', 'measured / predicted'],
    m.checks.map((k) => [
      k.figure,
      `${fmt(inUnit(k.predicted, k.unit), 2)} ${k.unit}`,
      `${fmt(inUnit(k.measured, k.unit), 2)} ${k.unit}`,
      fmt(k.measured / k.predicted, 2),
    ]),
  );

  const scale = TARGET.pending / PENDING;
  console.log(
    `\n### the model at the sizing target: ${fmt(TARGET.pending, 0)} pending, ${fmt(TARGET.agents, 0)} agents, ${fmt(ESCALATIONS * scale, 0)} open escalations (x${fmt(scale, 0)})`,
  );
  const s0 = m.stages[0];
  table(
    ['service', 'heap kept (restarted)', 'heap kept (live)', 'snapshot'],
    SERVICES.map((x) => {
      const u = m.perUnit[x];
      const rest = s0.heap[x] + ESCALATIONS * scale * u.heapPerEscalation + TARGET.agents * u.heapPerAgent;
      const heap = rest + TARGET.pending * u.heapPerPending;
      const live = rest + TARGET.pending * u.heapLivePerPending;
      const snaps = Object.entries(m.snapshotBytesPerUnit)
        .filter(([k]) => snapshotOwner(k) === x)
        .reduce((s, [, v]) => s + v * TARGET.pending, 0);
      return [x, `${fmt(heap / 2 ** 30, 2)} GiB`, `${fmt(live / 2 ** 30, 2)} GiB`, `${fmt(snaps / 2 ** 30, 2)} GiB`];
    }),
  );
  const logBytes = ['event log', 'audit chain', 'consumer streams'].map((g) => {
    const b = m.bytesPerUnit[g];
    return [g, `${fmt((TARGET.pending * b.pending + ESCALATIONS * scale * b.escalation + TARGET.agents * b.agent) / 2 ** 30, 2)} GiB`];
  });
  table(['streams (one replica)', 'bytes for the pending proposals, escalations and agents alone'], logBytes);
}

/** Which service a snapshot belongs to: they are named `<service>-<reactor>`. */
const snapshotOwner = (name: string) => name.split('-')[0];

function printThroughput(t: ThroughputFigures): void {
  console.log(`\n### throughput, one replica of each service alone on this machine`);
  table(
    ['service', 'rate', 'CPU per unit (service)', 'CPU per unit (nats-server)', 'proposals/s equivalent'],
    [
      [
        'intake',
        `${fmt(t.intake.perSecond, 0)} proposals/s (4 commands each)`,
        `${fmt(t.intake.cpuMsPerProposal, 2)} ms`,
        `${fmt(t.intake.natsCpuMsPerProposal, 2)} ms`,
        fmt(t.intake.perSecond, 0),
      ],
      [
        'resolver',
        `${fmt(t.resolver.perSecond, 0)} decisions/s`,
        `${fmt(t.resolver.cpuMsPerUnit, 2)} ms`,
        `${fmt(t.resolver.natsCpuMsPerUnit, 2)} ms`,
        fmt(t.resolver.perSecond, 0),
      ],
      [
        'sweeper',
        `${fmt(t.sweeper.perSecond, 0)} expiries/s`,
        `${fmt(t.sweeper.cpuMsPerUnit, 2)} ms`,
        `${fmt(t.sweeper.natsCpuMsPerUnit, 2)} ms`,
        '(timeouts only)',
      ],
      [
        'escalation',
        `${fmt(t.escalation.perSecond, 0)} escalations routed/s`,
        `${fmt(t.escalation.cpuMsPerUnit, 2)} ms`,
        `${fmt(t.escalation.natsCpuMsPerUnit, 2)} ms`,
        '(escalations only)',
      ],
      [
        'audit',
        `${fmt(t.audit.perSecond, 0)} entries/s`,
        `${fmt(t.audit.cpuMsPerUnit, 2)} ms`,
        `${fmt(t.audit.natsCpuMsPerUnit, 2)} ms`,
        fmt(t.audit.perSecond / t.eventsPerDecidedProposal, 0),
      ],
    ],
  );
  console.log(
    `bottleneck on the decided-proposal path, one replica each: ${t.bottleneck.service} at ${fmt(t.bottleneck.proposalsPerSecond, 0)} proposals/s; ` +
      `the ceiling no replica count lifts (intake scales out; every resolver replica follows the whole log; the audit chain has one writer): ${t.ceiling.service} at ${fmt(t.ceiling.proposalsPerSecond, 0)} proposals/s`,
  );
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const loadBefore = loadAverage();
  // The harness reads these when loaded: a first boot at the simulated size may take minutes.
  process.env['FAULTS_READY_TIMEOUT_MS'] ??= String(LOST_AFTER_MS);
  const processes = await import('../test/support/processes');
  const server = new processes.PrivateNatsServer();
  await server.start();
  process.env['NATS_URL'] = server.url;
  const ctx: Context = {
    url: server.url,
    logDir: join(server.dir, 'service-logs'),
    natsPid: (server as unknown as { child?: { pid?: number } }).child?.pid,
    processes,
    harness: await import('../test/support/conclave-harness'),
    councilHarness: await import('../test/support/council-harness'),
  };
  mkdirSync(ctx.logDir, { recursive: true });
  // Every bundle before the first measurement. The launcher's relative TS_NODE_PROJECT would
  // send webpack's tsconfig-paths plugin looking for it in each app's directory.
  process.env['TS_NODE_PROJECT'] = resolve(__dirname, '../tsconfig.base.json');
  // A build can fail while someone else's build of the same app cleans its output: tried again.
  for (let attempt = 1; ; attempt++) {
    try {
      processes.ensureBuilt([...SERVICES, 'council']);
      break;
    } catch (err) {
      if (attempt >= 5) throw err;
      const why = String((err as { stderr?: unknown }).stderr ?? (err as Error).message).trim();
      console.log(`building the services failed (attempt ${attempt}), trying again in 20 s: ${why}`);
      await sleep(20_000);
    }
  }
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  };
  const meta = {
    date: new Date().toISOString(),
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${fmt(totalmem() / 2 ** 30, 0)} GiB`,
    node: process.version,
    natsServer: (() => {
      try {
        return execFileSync(process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server', ['--version'], { encoding: 'utf8' }).trim();
      } catch {
        return '?';
      }
    })(),
    commit: git('rev-parse', '--short', 'HEAD'),
    uncommittedChanges: git('status', '--porcelain', '--untracked-files=no') !== '',
    command: 'npm run bench:capacity',
    sizes: {
      PENDING,
      AGENTS,
      DOMAINS,
      ESCALATIONS,
      DIVISOR,
      RESPONSES,
      PAYLOAD_BYTES,
      THROUGHPUT_PROPOSALS,
      BACKLOG,
      COUNCIL_RUNS,
      IN_FLIGHT,
    },
    loadBefore,
    loadDuring: {} as Record<string, string>,
    loadAfter: '',
    minutes: 0,
    gc: gc !== undefined,
  };
  console.log(
    `# Conclave capacity model (${meta.machine}, Node ${meta.node}, ${meta.natsServer}, private server ${server.url}, ${meta.date})`,
  );
  console.log(`load average before: ${loadBefore}${gc ? '' : '; WARNING: run with --expose-gc for the heap figures'}`);
  let throughput: ThroughputFigures | undefined;
  let council: CouncilFigures | undefined;
  let model: ModelFigures | undefined;
  try {
    const loadAt = (part: string) => {
      meta.loadDuring[part] = loadAverage();
      console.log(`(load average at the start of ${part}: ${meta.loadDuring[part]})`);
    };
    if (!SKIP.has('throughput')) {
      loadAt('A');
      throughput = await partThroughput(ctx);
    }
    if (!SKIP.has('council')) {
      loadAt('B');
      council = await partCouncil(ctx);
    }
    if (!SKIP.has('model')) {
      loadAt('C');
      model = await partModel(ctx);
    }
  } finally {
    if (process.env['CAPACITY_KEEP_LOGS']) {
      await server.stop();
      console.log(`services' logs kept in ${ctx.logDir}`);
    } else await server.dispose();
  }
  meta.loadAfter = loadAverage();
  meta.minutes = (performance.now() - t0) / 60_000;
  console.log(`\n## summary (a shared machine: figures move between runs)`);
  if (throughput) printThroughput(throughput);
  if (model) printModel(model, throughput, council);
  const out = resolve(__dirname, '../.data/bench-capacity.json');
  mkdirSync(resolve(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify({ meta, throughput, council, model }, null, 2) + '\n');
  console.log(`\nload average after: ${meta.loadAfter}; whole run ${fmt(meta.minutes, 1)} min; figures in .data/bench-capacity.json`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
