import { Injectable } from '@nestjs/common';
import {
  AcpError,
  Proposal,
  PROPOSAL_COMMAND_TYPES,
  SubmitProposal,
  parseProposeRequest,
} from '@conclave/acp-protocol';
import { canonicalJson, ClassificationLevel, isClassificationLevel } from '@conclave/registry-protocol';
import { CommandContext, decodeBase64, Identity, payloadHash, ProposalStore, verifyEd25519 } from '@conclave/service-kit';
import { ProposalView } from './proposal-view';

/**
 * `acp.v1.propose`: authenticate, validate, authorize the author in the domain (14.2), stamp the
 * payload hash (14.3/14.6), keep the payload signature after checking it against the author's
 * keys (14.3), record the classification (14.5), submit (RFC 3.1, 4.3, 14.4).
 */
@Injectable()
export class SubmitProposalHandler {
  constructor(
    private readonly store: ProposalStore,
    private readonly context: CommandContext,
    private readonly view: ProposalView,
  ) {}

  async handle(body: unknown, identity: Identity): Promise<{ proposal: Proposal }> {
    const request = parseProposeRequest(body);
    const raw = body as Record<string, unknown>;
    const author = await this.context.actAs(identity, request.author, 'author');
    this.context.authorize(author, 'propose', request.domain);
    const classification = this.classificationOf(raw['classification'], author);
    const hash = payloadHash(request.payload);
    const signature = this.payloadSignatureOf(raw['payload_signature'], request.payload, author);

    const { schema_version: _version, ...data } = request;
    const securityLabel =
      classification !== null || signature !== null
        ? { classification, payload_signature: signature?.signature ?? null, payload_signature_key_id: signature?.key_id ?? null }
        : null;
    // One load, one decision, one append: the label travels in the submission itself.
    const command: SubmitProposal = {
      type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
      ...this.context.metadata(author),
      data: { ...data, proposal_id: request.proposal_id ?? this.context.newId(), payload_hash: hash, security_label: securityLabel },
    };
    const result = await this.store.execute(command);
    return { proposal: await this.view.render(result.state, author) };
  }

  private classificationOf(value: unknown, author: Identity): ClassificationLevel | null {
    if (value === undefined || value === null) return null;
    if (!isClassificationLevel(value)) {
      throw new AcpError('SCHEMA_VIOLATION', 'classification must be one of public, internal, confidential, restricted', 'classification');
    }
    if (!this.context.canRead(author, value)) {
      throw new AcpError('FORBIDDEN', `the author's clearance does not cover ${value}`, 'classification');
    }
    return value;
  }

  /** RFC 14.3: Ed25519 over the payload's canonical JSON; checked against the author's active keys when auth is on. */
  private payloadSignatureOf(value: unknown, payload: unknown, author: Identity): { signature: string; key_id: string | null } | null {
    if (value === undefined || value === null) return null;
    const bytes = typeof value === 'string' && value.length <= 256 ? decodeBase64(value) : undefined;
    if (!bytes) throw new AcpError('SCHEMA_VIOLATION', 'payload_signature must be a base64 Ed25519 signature', 'payload_signature');
    if (!this.context.authRequired) return { signature: value as string, key_id: null };
    const message = new TextEncoder().encode(canonicalJson(payload));
    const keys = author.state.status === 'active' ? author.state.participant.keys.filter((k) => k.status === 'active') : [];
    const key = keys.find((k) => verifyEd25519(k.public_key, message, bytes));
    if (!key) {
      throw new AcpError('UNAUTHENTICATED', "payload_signature does not verify with the author's active keys over the payload's canonical JSON", 'payload_signature');
    }
    return { signature: value as string, key_id: key.key_id };
  }
}
