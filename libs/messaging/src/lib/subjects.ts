/**
 * The NATS API of DESIGN.md section 5, as constants in one place. Subjects are never derived
 * from class names; the prefix is configurable (default `acp`) so that test runs and
 * tenants can share a server.
 */
export const DEFAULT_ACP_PREFIX = 'acp';
export const DEFAULT_COUNCIL_PREFIX = 'council';

/** Command patterns, relative to the prefix: the subject is `<prefix>.<pattern>`. */
export const ACP_COMMANDS = {
  propose: 'v1.propose',
  respond: 'v1.respond',
  escalate: 'v1.escalate',
  resolve: 'v1.resolve',
  get: 'v1.get',
  list: 'v1.list',
  /** Causes and effects of one entry (RFC 11.3 lineage). */
  lineage: 'v1.lineage',
} as const;
export type AcpCommandName = keyof typeof ACP_COMMANDS;

export const COUNCIL_COMMANDS = {
  start: 'v1.start',
  get: 'v1.get',
  outcome: 'v1.outcome',
  /** Extensions (apps/council): the owner's answers to a frame challenge, and the human interrupt. */
  goalContract: 'v1.goal-contract',
  declineFrame: 'v1.frame-decline',
  interrupt: 'v1.interrupt',
  /** council:L5: a structured outcome (decision owner or evaluator). */
  recordOutcome: 'v1.outcome.record',
  /** council:L4/L5 read models: capability estimates, calibration, concentration audit. */
  estimates: 'v1.capability.estimates',
  calibration: 'v1.capability.calibration',
  concentration: 'v1.capability.concentration',
  /** The bridge: post a run's decision to ACP as a proposal (escalated for a value choice). */
  acpPropose: 'v1.acp.propose',
  /** The member API's JSON Schemas (tasks, answers, verdicts, cancel notices). */
  schemas: 'v1.schemas',
} as const;

/** Queue groups: every replica of a service shares one, so each command is served once. */
export const QUEUE_GROUPS = {
  intake: 'conclave-intake',
  escalation: 'conclave-escalation',
  council: 'conclave-council',
} as const;

export interface AcpSubjects {
  prefix: string;
  command(name: AcpCommandName): string;
  decisions(domain: string): string;
  proposals(domain: string): string;
  escalations(domain: string): string;
  /** Wildcards for stream definitions and subtree subscriptions. */
  allDecisions: string;
  allProposals: string;
  allEscalations: string;
}

export function acpSubjects(prefix: string = DEFAULT_ACP_PREFIX): AcpSubjects {
  return {
    prefix,
    command: (name) => `${prefix}.${ACP_COMMANDS[name]}`,
    decisions: (domain) => `${prefix}.v1.decisions.${domain}`,
    proposals: (domain) => `${prefix}.v1.proposals.${domain}`,
    escalations: (domain) => `${prefix}.v1.escalations.${domain}`,
    allDecisions: `${prefix}.v1.decisions.>`,
    allProposals: `${prefix}.v1.proposals.>`,
    allEscalations: `${prefix}.v1.escalations.>`,
  };
}

export interface CouncilSubjects {
  prefix: string;
  start: string;
  get: string;
  outcome: string;
  schemas: string;
  /** A member's durable task queue (JetStream): its tasks and cancel notices. */
  task(memberId: string): string;
  allTasks: string;
  /** Where a member answers a task (a request; the reply is the controller's verdict). */
  answer(memberId: string): string;
  allAnswers: string;
  decisions: string;
  /** council:L5: every recorded outcome, from the log (stream COUNCIL_OUTCOMES). */
  outcomes: string;
}

export function councilSubjects(prefix: string = DEFAULT_COUNCIL_PREFIX): CouncilSubjects {
  return {
    prefix,
    start: `${prefix}.${COUNCIL_COMMANDS.start}`,
    get: `${prefix}.${COUNCIL_COMMANDS.get}`,
    outcome: `${prefix}.${COUNCIL_COMMANDS.outcome}`,
    schemas: `${prefix}.${COUNCIL_COMMANDS.schemas}`,
    task: (memberId) => `${prefix}.v1.tasks.${memberId}`,
    allTasks: `${prefix}.v1.tasks.*`,
    answer: (memberId) => `${prefix}.v1.answers.${memberId}`,
    allAnswers: `${prefix}.v1.answers.*`,
    decisions: `${prefix}.v1.decisions`,
    outcomes: `${prefix}.v1.outcomes`,
  };
}

/**
 * JetStream streams for downstream consumers. Names carry an optional suffix so that test runs
 * on a shared server never collide; production uses the bare names of DESIGN.md section 5.
 */
export interface AcpStreamNames {
  decisions: string;
  proposals: string;
  escalations: string;
  councilDecisions: string;
  councilOutcomes: string;
  /** Council member task queues (work-queue retention, one durable consumer per member). */
  councilTasks: string;
}

export function acpStreamNames(suffix = ''): AcpStreamNames {
  const s = suffix ? `_${suffix}` : '';
  return {
    decisions: `ACP_DECISIONS${s}`,
    proposals: `ACP_PROPOSALS${s}`,
    escalations: `ACP_ESCALATIONS${s}`,
    councilDecisions: `COUNCIL_DECISIONS${s}`,
    councilOutcomes: `COUNCIL_OUTCOMES${s}`,
    councilTasks: `COUNCIL_TASKS${s}`,
  };
}
