import { Injectable } from '@nestjs/common';
import {
  AcpError,
  checkCauses,
  checkChildren,
  childrenToLoad,
  EntryLinks,
  Proposal,
  PROPOSAL_COMMAND_TYPES,
  ProposeRequest,
  SubmitProposal,
  parseProposeRequest,
} from '@conclave/acp-protocol';
import { activeKeys, canonicalJson, ClassificationLevel, grantFor, isClassificationLevel } from '@conclave/registry-protocol';
import {
  CommandContext,
  decodeBase64,
  Identity,
  ParticipantDirectory,
  payloadHash,
  ProposalStore,
  verifyEd25519,
} from '@conclave/service-kit';
import { ProposalView } from './proposal-view';
import { DomainPolicies } from './domain-policies';

/** Entries loaded at most to check one submission's children and their descendants (9.3). */
const MAX_LINKED_ENTRIES = 1000;

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
    private readonly directory: ParticipantDirectory,
    private readonly policies: DomainPolicies,
  ) {}

  async handle(body: unknown, identity: Identity): Promise<{ proposal: Proposal }> {
    const request = parseProposeRequest(body);
    const raw = body as Record<string, unknown>;
    const author = await this.context.actAs(identity, request.author, 'author');
    this.context.authorize(author, 'propose', request.domain);
    const classification = this.classificationOf(raw['classification'], author);
    const hash = payloadHash(request.payload);
    const signature = this.payloadSignatureOf(raw['payload_signature'], request.payload, author);

    const proposalId = request.proposal_id ?? this.context.newId();
    await this.checkLinks(proposalId, request, author);
    const eligible = await this.eligibleParticipants(request);
    // 18.1/18.2: the domain's policy document in force now decides this proposal for good.
    const policy = await this.policies.governing(request.domain);

    const { schema_version: _version, ...data } = request;
    const securityLabel =
      classification !== null || signature !== null
        ? { classification, payload_signature: signature?.signature ?? null, payload_signature_key_id: signature?.key_id ?? null }
        : null;
    // One load, one decision, one append: the label travels in the submission itself.
    const command: SubmitProposal = {
      type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
      ...this.context.metadata(author),
      data: {
        ...data,
        ...eligible,
        proposal_id: proposalId,
        payload_hash: hash,
        security_label: securityLabel,
        ...(policy ? { policy } : {}),
      },
    };
    const result = await this.store.execute(command);
    return { proposal: await this.view.render(result.state, author) };
  }

  /**
   * 11.3 and 9.3: causes must exist; children must exist (unless the parent expires) and must not
   * lead back to the parent. Entries are read through the store, from the log when the cache
   * has not seen them yet. A parent's resolution reports its children's outcomes, so its author
   * needs a grant on each child's domain (14.2: cross-domain access needs its own grant).
   */
  private async checkLinks(proposalId: string, request: ProposeRequest, author: Identity): Promise<void> {
    const known = new Map<string, EntryLinks | null>();
    for (const id of request.caused_by ?? []) known.set(id, await this.linksOf(id));
    checkCauses(proposalId, request.caused_by ?? [], known);
    const dependsOn = request.depends_on ?? [];
    if (dependsOn.length === 0) return;
    for (const id of dependsOn) {
      const domain = await this.domainOf(id);
      if (domain !== undefined && !this.view.mayReadDomain(author, domain)) {
        throw new AcpError(
          'FORBIDDEN',
          `${author.participant_id} has no grant on ${domain}, the domain of a child it depends on`,
          'depends_on',
        );
      }
    }
    const children = new Map<string, EntryLinks | null>();
    for (let missing = childrenToLoad(dependsOn, children); missing.length > 0; missing = childrenToLoad(dependsOn, children)) {
      if (children.size + missing.length > MAX_LINKED_ENTRIES) {
        throw new AcpError(
          'SCHEMA_VIOLATION',
          `depends_on reaches more than ${MAX_LINKED_ENTRIES} proposals through their children`,
          'depends_on',
        );
      }
      for (const id of missing) children.set(id, id === proposalId ? null : await this.linksOf(id));
    }
    checkChildren(proposalId, dependsOn, request.expires_at, children);
  }

  private async linksOf(id: string): Promise<EntryLinks | null> {
    const state = await this.entry(id);
    return state.status === 'initial' ? null : { depends_on: state.proposal.depends_on, caused_by: state.proposal.caused_by ?? [] };
  }

  /** The domain of an entry, undefined when there is no such entry (checkChildren decides then). */
  private async domainOf(id: string): Promise<string | undefined> {
    const state = await this.entry(id);
    return state.status === 'initial' ? undefined : state.proposal.domain;
  }

  private async entry(id: string) {
    let { state } = await this.store.load(id, 'cache');
    if (state.status === 'initial') ({ state } = await this.store.load(id, 'log'));
    return state;
  }

  /**
   * 7.3: a unanimous proposal that does not name its electorate gets, under authentication, every
   * active participant whose grant on the domain allows responding, fixed now (the registry's
   * list follows the log, so a grant made a moment ago may not count yet). With authentication
   * off there is no registry to ask: the list must be sent.
   */
  private async eligibleParticipants(
    request: ProposeRequest,
  ): Promise<Pick<SubmitProposal['data'], 'eligible_participants' | 'eligible_participants_source'>> {
    if (request.quorum_policy?.kind !== 'unanimous' || request.eligible_participants !== undefined || !this.context.authRequired) return {};
    const granted = this.directory.list().filter((p) => grantFor(p, request.domain)?.actions.includes('respond'));
    const eligible: string[] = [];
    // The list may hold deactivated participants; their current state decides.
    for (const p of granted) if ((await this.directory.load(p.participant_id)).status === 'active') eligible.push(p.participant_id);
    return { eligible_participants: eligible.sort(), eligible_participants_source: 'registry' };
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
    const keys = author.state.status === 'active' ? activeKeys(author.state.participant, this.context.now()) : [];
    const key = keys.find((k) => verifyEd25519(k.public_key, message, bytes));
    if (!key) {
      throw new AcpError(
        'UNAUTHENTICATED',
        "payload_signature does not verify with the author's active keys over the payload's canonical JSON",
        'payload_signature',
      );
    }
    return { signature: value as string, key_id: key.key_id };
  }
}
