import { Inject, Injectable } from '@nestjs/common';
import { AcpError, deriveEventId } from '@conclave/acp-protocol';
import { ConcurrencyError, EventLog, LogEvent } from '@conclave/event-log';
import type { ClassificationLevel } from '@conclave/registry-protocol';
import { EVENT_LOG } from '../tokens';

export const PROPOSAL_LABEL_CATEGORY = 'proposal-label';
export const PROPOSAL_LABELLED = 'ProposalLabelled';

/** What the edge records beside a proposal: its classification (14.5) and payload signature (14.3). */
export interface ProposalLabel {
  proposal_id: string;
  classification: ClassificationLevel | null;
  payload_hash: string;
  /** Ed25519 signature of the payload's canonical JSON by the author, base64, as sent. */
  payload_signature: string | null;
  /** The author's key that verified it (auth required), or null when it was not checked (auth off). */
  payload_signature_key_id: string | null;
}

interface ProposalLabelled extends LogEvent {
  type: typeof PROPOSAL_LABELLED;
  schema_version: 1;
  occurred_at: string;
  actor: string;
  causation_id: string;
  correlation_id: string;
  data: ProposalLabel;
}

/**
 * Security labels of proposals, in their own `proposal-label-<id>` streams: the proposal
 * decider (libs/acp-protocol) knows nothing of classification, and a label is immutable.
 * A label is appended (expected `no_stream`) BEFORE the proposal itself, so once a proposal
 * exists its label is final: a proposal without a label stream is unclassified, which makes
 * a negative answer safe to cache. Only proposals with a classification or a payload
 * signature get one. Every service that shows proposals reads them here (intake, escalation).
 */
@Injectable()
export class ProposalLabels {
  private readonly cache = new Map<string, ProposalLabel | null>();

  constructor(@Inject(EVENT_LOG) private readonly log: EventLog<LogEvent>) {}

  /** Appends the label; an identical existing label (a retry) is fine, a different one is CONFLICT. */
  async write(label: ProposalLabel, meta: { command_id: string; now: string; actor: string }): Promise<void> {
    const event: ProposalLabelled = {
      event_id: deriveEventId(meta.command_id, 0),
      type: PROPOSAL_LABELLED,
      schema_version: 1,
      occurred_at: meta.now,
      actor: meta.actor,
      causation_id: meta.command_id,
      correlation_id: label.proposal_id,
      data: label,
    };
    try {
      await this.log.append(labelStream(label.proposal_id), [event], 'no_stream');
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      const existing = await this.read(label.proposal_id);
      if (!existing || existing.classification !== label.classification || existing.payload_hash !== label.payload_hash) {
        throw new AcpError('CONFLICT', `proposal ${label.proposal_id} already has a different security label`, 'proposal_id');
      }
    }
  }

  /** The label of an existing proposal (null: unclassified and unsigned). */
  async of(proposalId: string): Promise<ProposalLabel | null> {
    if (this.cache.has(proposalId)) return this.cache.get(proposalId) ?? null;
    const label = await this.read(proposalId);
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(proposalId, label);
    return label;
  }

  private async read(proposalId: string): Promise<ProposalLabel | null> {
    const r = await this.log.read(labelStream(proposalId));
    const first = r.events[0]?.event as ProposalLabelled | undefined;
    return first ? first.data : null;
  }
}

export function labelStream(proposalId: string): string {
  return `${PROPOSAL_LABEL_CATEGORY}-${proposalId}`;
}
