import { createHash, createPrivateKey, createPublicKey, KeyObject, randomBytes, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import {
  AcpBridgeOptions,
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  DecisionBridged,
  StartedRun,
  acpBridgeEntries,
  bridgeCauses,
  bridgeEscalates,
  decide,
  parseAcpBridgeOptions,
  runDomain,
} from '@conclave/council-protocol';
import { ACP_COMMANDS } from '@conclave/messaging';
import { AUTH_HEADERS, REGISTRY_COMMAND_TYPES, signingInput } from '@conclave/registry-protocol';
import { CommandContext, IDS, Identity, IdGenerator, NATS_CONNECTION, ParticipantDirectory, SERVICE_CONFIG } from '@conclave/service-kit';
import { headers as natsHeaders, NatsConnection } from 'nats';
import { CouncilConfig } from './council.config';
import { RunDriver } from './run-driver';
import { RunRepository } from './run-repository';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function base32(n: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

/**
 * The ACP id of a council entry, derived from the run: the decision's time, then 80 bits of
 * sha256(`<run_id>:<kind>`). Anyone can recompute it, and a retried bridge posts the same entries
 * (ACP answers an identical retry as it answered the first).
 */
export function councilEntryUlid(runId: string, kind: 'decision' | 'proposal', at: string): string {
  const random = BigInt(`0x${createHash('sha256').update(`${runId}:${kind}`).digest('hex').slice(0, 20)}`);
  return base32(BigInt(Date.parse(at)), 10) + base32(random, 16);
}

type AcpReply =
  | { ok: true; proposal: { proposal_id: string; status: string } }
  | { ok: false; error: { code: string; message: string; field?: string } };

/** ACP codes that mean "try again": anything else is a refusal for good. */
const RETRYABLE_ACP_CODES = new Set(['INTERNAL', 'RATE_LIMITED', 'CONFLICT']);

export interface BridgedDecision {
  run_id: string;
  observation_id: string;
  proposal_id: string;
  domain: string;
  /** The ACP author of the entries: the council service's participant. */
  author: string;
  status: string;
  escalated: boolean;
}

/** Who asked for the post, and on what authority (recorded in DecisionBridged). */
interface BridgeRequest {
  requested_by: string;
  authorised_by: DecisionBridged['data']['authorised_by'];
}

/**
 * Posts a decided run to ACP (`<acp prefix>.v1.propose`, then `.escalate` for a value choice):
 * the service side of `acpBridgeEntries`. The council service posts as its own registered
 * participant (`CONCLAVE_COUNCIL_PARTICIPANT`), signing with its own key
 * (`CONCLAVE_COUNCIL_KEY_FILE`), so ACP authenticates it like any agent and records it as the
 * author; it never signs for anyone else. What authorises a post is the decision owner: a signed
 * `council.v1.acp.propose` by the owner, or the ACP proposal by which the owner started the run.
 * The owner must itself hold the ACP grant the post needs in the run's domain (propose, and
 * escalate for a value choice), so the service's grant never widens the owner's. The request
 * is recorded in the run's log (DecisionBridged) before any escalation is asked.
 */
@Injectable()
export class AcpBridge implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger(AcpBridge.name);
  private key: KeyObject | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    private readonly repo: RunRepository,
    private readonly driver: RunDriver,
    private readonly context: CommandContext,
    private readonly directory: ParticipantDirectory,
    @Inject(IDS) private readonly ids: IdGenerator,
  ) {}

  /** The participant the service posts as. */
  get participant(): string {
    return this.config.bridgeParticipant;
  }

  onModuleInit(): void {
    // A key that cannot be read is a configuration error: refuse to start rather than fail later.
    if (!this.config.bridgeKeyFile) return;
    let key: KeyObject;
    try {
      key = createPrivateKey(readFileSync(this.config.bridgeKeyFile));
    } catch (err) {
      throw new Error(`CONCLAVE_COUNCIL_KEY_FILE ${this.config.bridgeKeyFile} holds no private key: ${(err as Error).message}`);
    }
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error(`CONCLAVE_COUNCIL_KEY_FILE holds a ${key.asymmetricKeyType} key; the registry takes Ed25519 keys`);
    this.key = key;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.registerSelf();
  }

  /**
   * With a key and CONCLAVE_COUNCIL_BRIDGE_DOMAINS, the service's participant is registered at
   * start when the registry does not have it: role agent, the public half of its own key, and a
   * grant to propose and escalate (nothing else, factors 0) in each domain. An existing participant
   * is left as it is, whoever registered it; a registered key that is not this one only warns, as
   * ACP would then refuse every post.
   */
  private async registerSelf(): Promise<void> {
    const domains = (this.config.bridgeDomains ?? '').split(',').filter((d) => d.length > 0);
    if (!this.key || domains.length === 0) return;
    const id = this.participant;
    const publicKey = createPublicKey(this.key).export({ format: 'jwk' }).x as string;
    const state = await this.directory.load(id);
    if (state.status !== 'unregistered') {
      if (state.status === 'active' && !state.participant.keys.some((k) => k.status === 'active' && k.public_key === publicKey))
        this.logger.warn(`${id} is registered with another key than CONCLAVE_COUNCIL_KEY_FILE's: ACP will refuse the bridge's posts`);
      return;
    }
    const next = () => ({ command_id: this.ids.next(), now: this.context.now(), actor: 'bootstrap' });
    try {
      await this.directory.execute({
        type: REGISTRY_COMMAND_TYPES.RegisterParticipant,
        ...next(),
        data: { participant_id: id, roles: ['agent'], public_key: publicKey, display_name: 'council service (bridge to ACP)' },
      });
    } catch (err) {
      // Another replica registered it first, and grants it.
      if (err instanceof AcpError && err.code === 'CONFLICT') return;
      throw err;
    }
    for (const domain of domains)
      await this.directory.execute({
        type: REGISTRY_COMMAND_TYPES.GrantDomain,
        ...next(),
        data: { participant_id: id, domain, actions: ['propose', 'escalate'], domain_authority: 0, trust_score: 0 },
      });
    this.logger.log(`registered ${id}, granted propose and escalate in ${domains.join(', ')}`);
  }

  /** `council.v1.acp.propose`: the decision owner, authenticated, asks for its run's decision to be posted. */
  async postForOwner(runId: string, owner: Identity, input: unknown): Promise<BridgedDecision> {
    const state = await this.load(runId);
    if (owner.participant_id !== state.goal_contract.decision_owner)
      throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner posts its decision to ACP', 'actor');
    const options = parseAcpBridgeOptions(input);
    const domain = runDomain(state.goal_contract);
    this.context.authorize(owner, 'propose', domain);
    if (bridgeEscalates(state)) this.context.authorize(owner, 'escalate', domain);
    return this.post(state, { requested_by: owner.participant_id, authorised_by: { kind: 'owner-command' } }, options);
  }

  /**
   * A run started from an ACP proposal ended with a DecisionRecord: its decision goes back,
   * `caused_by` that proposal. ACP checked the author's propose grant in the domain when the
   * proposal was submitted; an escalation also needs the author's escalate grant.
   */
  async postForOrigin(runId: string, originProposalId: string): Promise<BridgedDecision> {
    const state = await this.load(runId);
    const origin = state.acp_origin;
    if (!origin || origin.proposal_id !== originProposalId)
      throw new CouncilError('UNKNOWN_REFERENCE', `run ${runId} was not started by ${originProposalId}`, 'run_id');
    if (bridgeEscalates(state)) {
      const author: Identity = { participant_id: origin.author, via: 'signature', state: await this.directory.load(origin.author) };
      this.context.authorize(author, 'escalate', origin.domain);
    }
    return this.post(
      state,
      { requested_by: origin.author, authorised_by: { kind: 'acp-origin', proposal_id: origin.proposal_id } },
      origin.bridge,
    );
  }

  private async load(runId: string): Promise<StartedRun> {
    const state = this.driver.stateOf(runId) ?? (await this.repo.load(runId)).state;
    if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', `no run ${runId}`, 'run_id');
    return state;
  }

  private async post(state: StartedRun, request: BridgeRequest, options: AcpBridgeOptions): Promise<BridgedDecision> {
    if (this.context.authRequired && !this.key)
      throw new CouncilError(
        'BRIDGE_NOT_CONFIGURED',
        `authentication is required and the council service has no key to sign as ${this.participant} (CONCLAVE_COUNCIL_KEY_FILE)`,
      );
    const runId = state.run_id;
    const at = state.decision?.recorded_at ?? (state.status === 'terminated' ? state.terminal.at : state.started_at);
    const done = state.acp_bridge;
    const ids = done
      ? { observation_id: done.observation_id, proposal_id: done.proposal_id }
      : { observation_id: councilEntryUlid(runId, 'decision', at), proposal_id: councilEntryUlid(runId, 'proposal', at) };
    const domain = runDomain(state.goal_contract);
    let status: string;
    let escalate: { reason: string; requested_by: string } | null;
    if (done) {
      // Posted before (a retry after a failure, or after the value choice): read it back, and ask
      // for the escalation if an earlier attempt recorded the post but did not get that far.
      status = await this.status(done.proposal_id);
      escalate = done.escalated && bridgeEscalates(state) ? acpBridgeEntries(state, ids, options, this.parties(request)).escalation : null;
    } else {
      const entries = acpBridgeEntries(state, ids, options, this.parties(request));
      const bridge: DecisionBridged['data'] = {
        ...request,
        author: this.participant,
        domain,
        ...ids,
        caused_by: bridgeCauses(state, options),
        escalated: entries.escalation !== null,
      };
      // The run's own rules for recording the post, decided before anything reaches ACP: a post
      // the run would refuse to record must not leave entries in ACP that no run accounts for.
      decide({ type: C.RecordDecisionBridge, bridge, now: this.context.now() }, state);
      await this.propose(entries.observation);
      status = await this.propose(entries.proposal);
      // In the run's log before the escalation is asked: the human's resolution always comes after it.
      await this.driver.execute(runId, (_s, now) => ({ type: C.RecordDecisionBridge, bridge, now }));
      escalate = entries.escalation;
    }
    if (escalate && status === 'pending') {
      const reply = await this.acp(ACP_COMMANDS.escalate, { proposal_id: ids.proposal_id, ...escalate });
      status = this.accepted(reply).status;
    }
    return {
      run_id: runId,
      ...ids,
      domain,
      author: this.participant,
      status,
      escalated: done ? done.escalated : escalate !== null,
    };
  }

  private parties(request: BridgeRequest) {
    return { author: this.participant, requested_by: request.requested_by };
  }

  /**
   * Submits one entry. An identical retry is accepted by ACP as the first was; an entry already
   * there under the derived id but different (someone else's, or other options) is refused: the
   * bridge never takes an entry it did not write for its own.
   */
  private async propose(entry: Record<string, unknown>): Promise<string> {
    return this.accepted(await this.acp(ACP_COMMANDS.propose, entry)).status;
  }

  private async status(proposalId: string): Promise<string> {
    return this.accepted(await this.acp(ACP_COMMANDS.get, { proposal_id: proposalId })).status;
  }

  private accepted(reply: AcpReply): { proposal_id: string; status: string } {
    if (reply.ok) return reply.proposal;
    const what = `ACP refused the bridge: ${reply.error.code}: ${reply.error.message}`;
    // A transient refusal is an infrastructure failure (retried by the caller), not a rule.
    if (RETRYABLE_ACP_CODES.has(reply.error.code)) throw new Error(what);
    throw new CouncilError('ACP_REFUSED', what, reply.error.field);
  }

  /** One ACP command as the service's participant: signed with its own key when it has one. */
  private async acp(pattern: string, body: unknown): Promise<AcpReply> {
    const subject = `${this.config.subjectPrefix}.${pattern}`;
    const bytes = encoder.encode(JSON.stringify(body));
    const msg = await this.nc.request(subject, bytes, { timeout: 10_000, headers: this.signed(subject, bytes) });
    return JSON.parse(decoder.decode(msg.data)) as AcpReply;
  }

  /** The Ed25519 headers of docs/security.md, over the exact body bytes; none without a key (authentication off). */
  private signed(subject: string, body: Uint8Array) {
    if (!this.key) return undefined;
    const timestamp = this.context.now();
    const nonce = randomBytes(18).toString('base64url');
    const participant_id = this.participant;
    const h = natsHeaders();
    h.set(AUTH_HEADERS.participant, participant_id);
    h.set(AUTH_HEADERS.timestamp, timestamp);
    h.set(AUTH_HEADERS.nonce, nonce);
    h.set(
      AUTH_HEADERS.signature,
      sign(null, signingInput({ subject, timestamp, nonce, participant_id }, body), this.key).toString('base64'),
    );
    return h;
  }
}
