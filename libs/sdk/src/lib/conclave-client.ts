import { parseDecisionEvent, parseProposal } from '@conclave/acp-protocol';
import type { DecisionEvent, EscalationMetadata, LineageNode, Proposal, ProposalStatus, Resolution } from '@conclave/acp-protocol';
import { councilRunIdForProposal, DELIBERATION_PAYLOAD_KEY } from '@conclave/council-protocol';
import { acpStreamNames, acpSubjects, AcpSubjects, ErrorReply, newUlid, OkReply } from '@conclave/messaging';
import { AckPolicy, Authenticator, connect, DeliverPolicy, JetStreamClient, JetStreamManager, NatsConnection } from 'nats';
import type { Tracer, TracerProvider } from '@opentelemetry/api';
import { ConclaveError, ConclaveUnavailableError } from './conclave-error';
import { bindFeed, readConsumer, withJetStreamApiPrefix } from './feeds';
import { DEFAULT_RATE_LIMIT_WAIT_MS, RequestRetries } from './request-retries';
import { sdkTracer, withTraceHeaders } from './tracing';

export interface ConclaveClientOptions {
  /** An existing connection (not closed by the client) or a server URL to connect to. */
  nc?: NatsConnection;
  servers?: string;
  /** Subject prefix of the deployment (default `acp`). */
  prefix?: string;
  /** Suffix of the consumer-facing stream names (tests use one per run). */
  streamSuffix?: string;
  /** Request timeout in milliseconds (default 5000). */
  timeoutMs?: number;
  /**
   * How many times `propose`, `endorse` and `challenge` resend an unanswered request (default 2).
   * Safe: a retry carries the same proposal_id and body, and the service answers a retry of what
   * it already recorded with the recorded proposal.
   */
  retries?: number;
  /**
   * How long one call may wait, in all, to resend requests refused RATE_LIMITED (default 10 s;
   * 0: never, the refusal is thrown). Every request (commands, reads, `call`) is resent after the
   * refusal's `retry_after_ms` plus jitter, signed afresh; a hint that no longer fits in what is
   * left is thrown at once as the RATE_LIMITED ConclaveError, with `retryAfterMs`.
   */
  rateLimitWaitMs?: number;
  /** Hook that adds authentication headers to each command (see the security docs). */
  sign?: (subject: string, body: Uint8Array) => Promise<Record<string, string>> | Record<string, string>;
  /** Signs every command as a registered participant: `signer: ed25519Signer(participantId, privateKey)` (used when `sign` is absent). */
  signer?: (subject: string, body: Uint8Array) => Promise<Record<string, string>> | Record<string, string>;
  /**
   * Where replies to this client arrive (`_INBOX_<nats user>` on a server with per-user inbox
   * permissions, deploy/nats): nobody else may subscribe there, so nobody else reads its replies.
   * Only used when the client connects itself; with `nc`, give the prefix to your own `connect`.
   */
  inboxPrefix?: string;
  /**
   * Where the client's spans (a CLIENT span per request, a CONSUMER span per feed message) go:
   * as OpenTelemetry instrumentations take one. Absent, the globally registered provider (none:
   * the spans only carry the trace ids along).
   */
  tracerProvider?: TracerProvider;
  /** NATS user and password, when the client connects itself. */
  user?: string;
  pass?: string;
  /** NATS credentials (e.g. `credsAuthenticator(readFileSync('agent.creds'))`), when the client connects itself. */
  authenticator?: Authenticator;
  /**
   * The JetStream API prefix of the feeds, where the client's NATS account imports them from the
   * services' account: `$JS.conclave.API` under deploy/nats/nats-accounts.conf. The server's own
   * `$JS.API` when absent (one account, or the services' user).
   */
  jsApiPrefix?: string;
}

/** What an agent sends to propose; the service fills status, responses and resolution. */
export interface ProposeInput {
  /** Default: a new ULID per `propose` call, reused by its retries. */
  proposal_id?: string;
  type?: 'proposal' | 'observation' | 'hypothesis';
  domain: string;
  author: string;
  payload: Record<string, unknown>;
  quorum: number;
  /** Default: now (the wire field is required; the client fills it once per call). */
  created_at?: string;
  expires_at?: string | null;
  quorum_policy?: { kind: string; threshold?: number };
  /** Child proposals (RFC 9.3); they must exist, unless `expires_at` is set. */
  depends_on?: string[];
  /** Who must respond under a unanimous quorum (RFC 7.3); under authentication the registry fills it when absent. */
  eligible_participants?: string[];
  /** Ids of earlier entries that caused this one (RFC 11.3); they must exist. */
  caused_by?: string[];
  /** Extensions the deployment understands (classification, payload_signature...). */
  [extension: string]: unknown;
}

/**
 * An ACP proposal that asks the council service for a deliberation: the payload carries
 * `deliberate: {goal_contract, panel, policy?, bridge?}` (docs/council-conformance.md).
 */
export interface DeliberationInput {
  proposal_id?: string;
  domain: string;
  /** The proposal's author: the GoalContract's decision owner. */
  author: string;
  quorum: number;
  quorum_policy?: { kind: string; threshold?: number };
  expires_at?: string | null;
  goal_contract: Record<string, unknown>;
  panel: unknown[];
  policy?: Record<string, unknown>;
  /** How the decision comes back to ACP; by default this proposal's quorum and quorum policy. */
  bridge?: { quorum: number; quorum_policy?: { kind: string; threshold?: number }; expires_at?: string | null };
}

/** A vote: the service computes the weight from the factors (spec 6.1). */
export interface VoteInput {
  participant_id: string;
  confidence: number;
  domain_authority?: number;
  trust_score?: number;
  reason?: string | null;
  timestamp?: string;
}

export interface ListQuery {
  domain?: string;
  status?: ProposalStatus;
  limit?: number;
  cursor?: string;
}

/** One entry of a lineage (see `lineage()`). */
export type { LineageNode } from '@conclave/acp-protocol';

/** The causes and effects of one entry (RFC 11.3), as `acp.v1.lineage` answers. */
export interface Lineage {
  entry: LineageNode;
  causes: LineageNode[];
  effects: LineageNode[];
  omitted: number;
  truncated: boolean;
}

export interface DecisionsOptions {
  /** Exact domain (`risk.credit`) or a subtree (`risk.>`); all domains when absent. */
  domain?: string;
  /** A durable consumer name: a restarted reader resumes where this name left off. */
  durable?: string;
  /**
   * Bind to the `durable` feed an operator provisioned (`conclave feeds provision`) and never
   * create a consumer: what a NATS accounts user must do (deploy/nats). The feed's own filter,
   * start and ack wait apply (`domain`, when given, must be its filter; `from`, `since`, `ackWaitMs`
   * are ignored). A missing feed is a FeedError FEED_NOT_PROVISIONED.
   */
  bind?: boolean;
  /** Where a new consumer starts: every decision kept (`all`, default) or only new ones. */
  from?: 'all' | 'new';
  /** Start at decisions stored at or after this time (overrides `from`). */
  since?: Date;
  /** Ends the iteration (and deletes an ephemeral consumer) when aborted, even while waiting. */
  signal?: AbortSignal;
  /**
   * How long the server waits for a loop body to return before it delivers that event again
   * (default 30 s). A redelivery of an event already read is dropped, so a slow reader still sees
   * each event once and in order; a reader that dies mid-body gets it again after restarting.
   * A delivery lost in transit (the server restarting mid-pull) also comes back after the ack
   * wait: after newer events, read then, once.
   */
  ackWaitMs?: number;
}

/** Filters of the escalation inbox. */
export interface EscalationQuery {
  status?: 'open' | 'resolved' | 'expired' | 'all';
  domain?: string;
  assignee?: string;
  limit?: number;
}

/** One escalation as the escalation service's desk sees it (see docs/escalation.md). */
export interface EscalationSummary {
  proposal_id: string;
  domain: string;
  status: 'open' | 'resolved' | 'expired';
  escalation_id: string;
  escalation: EscalationMetadata;
  votes_for: number;
  votes_against: number;
  assignees: string[];
  routed: boolean;
  route_id: string | null;
  payload_hash: string | null;
  next_step: number;
  next_step_due_at: string | null;
  sign_offs: Array<{ by: string; outcome: 'approved' | 'rejected'; note: string | null; at: string }>;
  resolution: Resolution | null;
  updated_at: string;
  [extension: string]: unknown;
}

export interface EscalationView {
  escalation: EscalationSummary;
  proposal: Proposal;
  votes: { for: number; against: number; responses: number };
  binding: { escalation_id: string; payload_hash: string };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The TypeScript client of the Conclave NATS API: agents propose and vote, humans and tools
 * escalate and resolve, downstream systems follow decisions. Every failure is a
 * `ConclaveError` carrying the reply's stable code.
 */
export class ConclaveClient {
  private readonly subjects: AcpSubjects;
  private readonly decisionsStream: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly requestRetries: RequestRetries;
  private readonly proposalsStream: string;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly options: ConclaveClientOptions,
  ) {
    this.subjects = acpSubjects(options.prefix);
    this.decisionsStream = acpStreamNames(options.streamSuffix).decisions;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.retries = options.retries ?? 2;
    this.requestRetries = new RequestRetries(options.rateLimitWaitMs ?? DEFAULT_RATE_LIMIT_WAIT_MS);
    this.proposalsStream = acpStreamNames(options.streamSuffix).proposals;
  }

  static async connect(options: ConclaveClientOptions = {}): Promise<ConclaveClient> {
    const prefixed = (nc: NatsConnection) => (options.jsApiPrefix ? withJetStreamApiPrefix(nc, options.jsApiPrefix) : nc);
    if (options.nc) return new ConclaveClient(prefixed(options.nc), false, options);
    const nc = await connect({
      servers: options.servers ?? 'nats://127.0.0.1:4222',
      name: 'conclave-client',
      // A long-lived agent outlives a NATS restart of any length, as the services do; nats.js
      // gives up after 10 attempts (about 20 s) by default and the client would be dead for good.
      maxReconnectAttempts: -1,
      // nats.js otherwise builds two stack traces per request (about 130 µs of the agent's CPU per
      // proposal, profiled); an unanswered request's ConclaveUnavailableError has its own.
      noAsyncTraces: true,
      ...(options.inboxPrefix ? { inboxPrefix: options.inboxPrefix } : {}),
      ...(options.user ? { user: options.user, pass: options.pass } : {}),
      ...(options.authenticator ? { authenticator: options.authenticator } : {}),
    });
    return new ConclaveClient(prefixed(nc), true, options);
  }

  /**
   * `nc` with its JetStream API under `apiPrefix` (see `jsApiPrefix`), for what takes a connection
   * of its own: a CouncilMember, `bindFeed`, nats.js code of the caller.
   */
  static withJetStreamApiPrefix(nc: NatsConnection, apiPrefix: string): NatsConnection {
    return withJetStreamApiPrefix(nc, apiPrefix);
  }

  /**
   * Posts a proposal. The body is built once (a new ULID `proposal_id` and `created_at` now,
   * unless given) and resent as it is when a request goes unanswered, so a retry never makes a
   * second proposal.
   */
  async propose(input: ProposeInput): Promise<Proposal> {
    const body = {
      schema_version: '1.0',
      type: 'proposal',
      expires_at: null,
      ...input,
      proposal_id: input.proposal_id ?? newUlid(),
      created_at: input.created_at ?? new Date().toISOString(),
    };
    return (await this.command<{ proposal: Proposal }>('propose', body, { resendUnanswered: true })).proposal;
  }

  /**
   * Asks for a council through ACP. The council service starts the run `run_id` (derived from the
   * proposal's id) with the author as its decision owner, and posts its decision back to ACP as
   * an observation and a proposal, `caused_by` this one.
   */
  async requestDeliberation(input: DeliberationInput): Promise<{ proposal: Proposal; run_id: string }> {
    const { goal_contract, panel, policy, bridge, ...entry } = input;
    const ask = { goal_contract, panel, ...(policy !== undefined ? { policy } : {}), ...(bridge ? { bridge } : {}) };
    const proposal = await this.propose({ ...entry, type: 'proposal', payload: { [DELIBERATION_PAYLOAD_KEY]: ask } });
    return { proposal, run_id: councilRunIdForProposal(proposal.proposal_id) };
  }

  endorse(proposalId: string, vote: VoteInput): Promise<Proposal> {
    return this.respond(proposalId, 'endorse', vote);
  }

  challenge(proposalId: string, vote: VoteInput): Promise<Proposal> {
    return this.respond(proposalId, 'challenge', vote);
  }

  async escalate(proposalId: string, request: { reason: string; requested_by: string }): Promise<Proposal> {
    return (await this.command<{ proposal: Proposal }>('escalate', { proposal_id: proposalId, ...request })).proposal;
  }

  /**
   * A human resolution of an escalated proposal. `escalation_id` and `payload_hash` (from
   * `escalation()`'s `binding`) bind it to the exact escalation the human saw; a human resolver
   * token goes in the `sign` hook as `Authorization: Bearer <token>`.
   */
  async resolve(
    proposalId: string,
    request: { outcome: 'approved' | 'rejected'; resolved_by?: string; note: string; escalation_id?: string; payload_hash?: string },
  ): Promise<Proposal> {
    return (await this.command<{ proposal: Proposal }>('resolve', { proposal_id: proposalId, ...request })).proposal;
  }

  /** The escalation service's inbox (`<prefix>.v1.escalation.list`): open escalations by default. */
  async escalations(query: EscalationQuery = {}): Promise<EscalationSummary[]> {
    return (await this.request<{ escalations: EscalationSummary[] }>(`${this.subjects.prefix}.v1.escalation.list`, query)).escalations;
  }

  /** One escalation with its proposal, vote totals and the binding a resolution should carry. */
  async escalation(proposalId: string): Promise<EscalationView> {
    const { escalation, proposal, votes, binding } = await this.request<EscalationView>(`${this.subjects.prefix}.v1.escalation.get`, {
      proposal_id: proposalId,
    });
    return { escalation, proposal, votes, binding };
  }

  async get(proposalId: string): Promise<Proposal> {
    return (await this.command<{ proposal: Proposal }>('get', { proposal_id: proposalId })).proposal;
  }

  async list(query: ListQuery = {}): Promise<{ proposals: Proposal[]; next_cursor: string | null }> {
    const { proposals, next_cursor } = await this.command<{ proposals: Proposal[]; next_cursor: string | null }>('list', query);
    return { proposals, next_cursor };
  }

  /** The causes and effects of one entry (RFC 11.3), up to `depth` links away (default 8, at most 16). */
  async lineage(proposalId: string, options: { depth?: number } = {}): Promise<Lineage> {
    return (await this.command<{ lineage: Lineage }>('lineage', { proposal_id: proposalId, ...options })).lineage;
  }

  /**
   * Decision events from the JetStream stream, in order (but for a delivery lost in transit: see
   * `ackWaitMs`), acknowledged after the loop body returns: with a `durable` name a restarted
   * reader resumes where it left off and loses none.
   * Each is validated (`schema_version` "1.0", the 12.6 fields): one this client cannot read ends
   * the iteration with a ConclaveError (UNSUPPORTED_SCHEMA_VERSION, SCHEMA_VIOLATION...) and stays
   * unacknowledged, so an upgraded reader still gets it.
   */
  decisions(options: DecisionsOptions = {}): AsyncGenerator<DecisionEvent> {
    const filter = options.domain ? this.subjects.decisions(options.domain) : this.subjects.allDecisions;
    return this.follow(this.decisionsStream, filter, options, parseDecisionEvent);
  }

  /**
   * New pending proposals (type `proposal`) from ACP_PROPOSALS on `<prefix>.v1.proposals.<domain>`,
   * for participants to review: in order, validated, acknowledged after the loop body returns,
   * durable with a `durable` name, exactly like `decisions()`.
   */
  proposals(options: DecisionsOptions = {}): AsyncGenerator<Proposal> {
    const filter = options.domain ? this.subjects.proposals(options.domain) : this.subjects.allProposals;
    return this.follow(this.proposalsStream, filter, options, parseProposal);
  }

  private async *follow<T>(stream: string, filter: string, options: DecisionsOptions, parse: (input: unknown) => T): AsyncGenerator<T> {
    if (options.bind) {
      if (!options.durable) throw new TypeError('bind needs the durable name of the provisioned feed');
      const feed = await bindFeed(this.nc, stream, options.durable, options.domain ? filter : undefined);
      return yield* readConsumer(feed, parse, this.tracer(), options.signal);
    }
    const js: JetStreamClient = this.nc.jetstream();
    const jsm: JetStreamManager = await this.nc.jetstreamManager();
    const config = {
      ack_policy: AckPolicy.Explicit,
      ...(options.since
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: options.since.toISOString() }
        : { deliver_policy: options.from === 'new' ? DeliverPolicy.New : DeliverPolicy.All }),
      filter_subject: filter,
      ...(options.ackWaitMs ? { ack_wait: options.ackWaitMs * 1_000_000 } : {}),
      ...(options.durable ? { durable_name: options.durable } : { inactive_threshold: 60_000_000_000 }),
    };
    const info = options.durable
      ? await jsm.consumers.info(stream, options.durable).catch(() => jsm.consumers.add(stream, config))
      : await jsm.consumers.add(stream, config);
    const consumer = await js.consumers.get(stream, info.name);
    try {
      yield* readConsumer(consumer, parse, this.tracer(), options.signal);
    } finally {
      if (!options.durable) await jsm.consumers.delete(stream, info.name).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.ownsConnection && !this.nc.isClosed()) await this.nc.drain();
  }

  private respond(proposalId: string, responseType: 'endorse' | 'challenge', vote: VoteInput): Promise<Proposal> {
    const body = { schema_version: '1.0', proposal_id: proposalId, response_type: responseType, reason: null, ...vote };
    return this.command<{ proposal: Proposal }>('respond', body, { resendUnanswered: true }).then((r) => r.proposal);
  }

  /**
   * Any other request of the deployment's API, by its pattern relative to the prefix (e.g.
   * `v1.participants.list`, `v1.audit.query`), signed like every command.
   */
  call<T extends object>(pattern: string, body: object = {}): Promise<T> {
    return this.request<T>(`${this.subjects.prefix}.${pattern}`, body);
  }

  private command<T extends object>(
    name: Parameters<AcpSubjects['command']>[0],
    body: object,
    how?: { resendUnanswered: boolean },
  ): Promise<T> {
    return this.request<T>(this.subjects.command(name), body, how);
  }

  /** The tracer of the SDK's spans: from the `tracerProvider` option, else the global provider. */
  private tracer(): Tracer {
    return sdkTracer(this.options.tracerProvider);
  }

  /**
   * One call, through the client's one retry loop: a RATE_LIMITED refusal is resent after its
   * hint while the wait budget lasts (every request); an unanswered request is resent as it is
   * (the same body) up to `retries` times only with `resendUnanswered` (propose, respond: the
   * service answers a resend of what it recorded with the recorded proposal). Any other answer,
   * success or refusal, is final. Each attempt is signed afresh.
   */
  private request<T extends object>(subject: string, body: object, how = { resendUnanswered: false }): Promise<T> {
    let unanswered = 0;
    const resend = (err: unknown) => how.resendUnanswered && err instanceof ConclaveUnavailableError && unanswered++ < this.retries;
    return this.requestRetries.run(() => this.requestOnce<T>(subject, body), resend);
  }

  private async requestOnce<T extends object>(subject: string, body: object): Promise<T> {
    const bytes = encoder.encode(JSON.stringify(body));
    const sign = this.options.sign ?? this.options.signer;
    const extra = sign ? await sign(subject, bytes) : undefined;
    return withTraceHeaders(this.tracer(), subject, async (h) => {
      let data: Uint8Array;
      try {
        for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
        data = (await this.nc.request(subject, bytes, { timeout: this.timeoutMs, headers: h })).data;
      } catch (cause) {
        throw new ConclaveUnavailableError(subject, { cause });
      }
      const reply = JSON.parse(decoder.decode(data)) as OkReply<T> | ErrorReply;
      if (!reply.ok) throw new ConclaveError(reply.error);
      return reply;
    });
  }
}
