import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AcpBridgeOptions, CouncilError, acpBridgeEntries } from '@conclave/council-protocol';
import { ACP_COMMANDS } from '@conclave/messaging';
import { NATS_CONNECTION, SERVICE_CONFIG } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
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

export interface BridgedDecision {
  run_id: string;
  observation_id: string;
  proposal_id: string;
  domain: string;
  status: string;
  escalated: boolean;
}

/**
 * Posts a decided run to ACP (`<acp prefix>.v1.propose`, then `.escalate` for a value choice):
 * the service side of `acpBridgeEntries`. Asked by the run's decision owner, the entries are
 * authored by the owner. With authentication required, ACP intake would need the owner's own
 * signature on them, which this service cannot make: the bridge is for deployments where the
 * council service's ACP traffic is trusted (authentication off), as the docs say.
 */
@Injectable()
export class AcpBridge {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: CouncilConfig,
    private readonly repo: RunRepository,
    private readonly driver: RunDriver,
  ) {}

  async post(runId: string, actor: string, options: AcpBridgeOptions): Promise<BridgedDecision> {
    const state = this.driver.stateOf(runId) ?? (await this.repo.load(runId)).state;
    if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', `no run ${runId}`, 'run_id');
    if (actor !== state.goal_contract.decision_owner)
      throw new CouncilError('NOT_AUTHORIZED_ROLE', 'only the decision owner posts its decision to ACP', 'actor');
    const at = state.decision?.recorded_at ?? (state.status === 'terminated' ? state.terminal.at : state.started_at);
    const ids = { observation_id: councilEntryUlid(runId, 'decision', at), proposal_id: councilEntryUlid(runId, 'proposal', at) };
    const entries = acpBridgeEntries(state, ids, options);
    await this.propose(entries.observation);
    let status = await this.propose(entries.proposal);
    if (entries.escalation && status === 'pending') {
      const reply = await this.acp(ACP_COMMANDS.escalate, { proposal_id: ids.proposal_id, ...entries.escalation });
      if (!reply.ok) throw new CouncilError('INTERNAL', `ACP refused the escalation: ${reply.error.code}: ${reply.error.message}`);
      status = reply.proposal.status;
    }
    return {
      run_id: runId,
      ...ids,
      domain: String(entries.proposal['domain']),
      status,
      escalated: entries.escalation !== null,
    };
  }

  /** Submits one entry; one already there (a retry) is read back instead. */
  private async propose(entry: Record<string, unknown>): Promise<string> {
    const reply = await this.acp(ACP_COMMANDS.propose, entry);
    if (reply.ok) return reply.proposal.status;
    if (reply.error.code === 'DUPLICATE_PROPOSAL_ID') {
      const got = await this.acp(ACP_COMMANDS.get, { proposal_id: entry['proposal_id'] });
      if (got.ok) return got.proposal.status;
    }
    throw new CouncilError('INTERNAL', `ACP refused the entry: ${reply.error.code}: ${reply.error.message}`, reply.error.field);
  }

  private async acp(pattern: string, body: unknown): Promise<AcpReply> {
    const msg = await this.nc.request(`${this.config.subjectPrefix}.${pattern}`, encoder.encode(JSON.stringify(body)), { timeout: 10_000 });
    return JSON.parse(decoder.decode(msg.data)) as AcpReply;
  }
}
