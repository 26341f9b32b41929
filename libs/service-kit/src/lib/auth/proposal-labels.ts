import { Inject, Injectable } from '@nestjs/common';
import { PROPOSAL_EVENT_TYPES, ProposalDetails, ProposalEvent, proposalStream } from '@conclave/acp-protocol';
import { EventLog, LogEvent } from '@conclave/event-log';
import type { ClassificationLevel } from '@conclave/registry-protocol';
import { EVENT_LOG } from '../tokens';

export const PROPOSAL_LABEL_CATEGORY = 'proposal-label';
export const PROPOSAL_LABELLED = 'ProposalLabelled';

/** A proposal's classification (14.5) and payload signature (14.3), as readers need them. */
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
 * Security labels of proposals. A label is part of the proposal's submission (one write per
 * propose: `security_label` of ProposalSubmitted), so once a proposal exists its label is final
 * and safe to cache. Proposals submitted before that kept their label in a `proposal-label-<id>`
 * stream of its own, which is still read for them. Every service that shows proposals reads
 * labels here (intake, escalation).
 */
@Injectable()
export class ProposalLabels {
  private readonly cache = new Map<string, ProposalLabel | null>();

  constructor(@Inject(EVENT_LOG) private readonly log: EventLog<LogEvent>) {}

  /**
   * The label of an existing proposal (null: unclassified and unsigned). A caller that holds the
   * proposal's state passes its details, and nothing is read.
   */
  async of(proposalId: string, submitted?: ProposalDetails): Promise<ProposalLabel | null> {
    if (submitted && submitted.security_label !== undefined) return labelOf(submitted);
    if (this.cache.has(proposalId)) return this.cache.get(proposalId) ?? null;
    const first = (await this.log.read(proposalStream(proposalId))).events[0]?.event as ProposalEvent | undefined;
    // No proposal yet: nothing to cache, its label may still come with it.
    if (!first || first.type !== PROPOSAL_EVENT_TYPES.ProposalSubmitted) return null;
    const label = first.data.security_label !== undefined ? labelOf(first.data) : await this.readLabelStream(proposalId);
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(proposalId, label);
    return label;
  }

  private async readLabelStream(proposalId: string): Promise<ProposalLabel | null> {
    const r = await this.log.read(labelStream(proposalId));
    const first = r.events[0]?.event as ProposalLabelled | undefined;
    return first ? first.data : null;
  }
}

function labelOf(details: ProposalDetails): ProposalLabel | null {
  const l = details.security_label;
  if (!l) return null;
  return {
    proposal_id: details.proposal_id,
    classification: (l.classification as ClassificationLevel | null) ?? null,
    payload_hash: details.payload_hash ?? '',
    payload_signature: l.payload_signature,
    payload_signature_key_id: l.payload_signature_key_id,
  };
}

export function labelStream(proposalId: string): string {
  return `${PROPOSAL_LABEL_CATEGORY}-${proposalId}`;
}
