import { Injectable } from '@nestjs/common';
import { AcpError, LineageNode, MAX_LINEAGE_DEPTH, parseLineageRequest, ProposalState } from '@conclave/acp-protocol';

export type { LineageNode } from '@conclave/acp-protocol';
import { Identity, ProposalStore } from '@conclave/service-kit';
import { LineageIndex } from './lineage-index';
import { ProposalView } from './proposal-view';

const DEFAULT_DEPTH = 8;
/** Entries one lineage reply holds at most on each side (bounded work and reply size). */
const MAX_NODES = 256;

export interface LineageReply {
  entry: LineageNode;
  /** Earlier entries it came from, nearest first (its `caused_by`, theirs, ...). */
  causes: LineageNode[];
  /** Later entries that name it as a cause, directly or through others, nearest first. */
  effects: LineageNode[];
  /** Entries left out: in domains the reader has no grant on (14.2). */
  omitted: number;
  /** True when `depth` or the size bound cut the walk short. */
  truncated: boolean;
}

/**
 * `acp.v1.lineage` (RFC 11.3): the chain of causes and effects of one entry. Reading the entry
 * needs a grant on its domain, like `get`; linked entries in other domains the reader cannot
 * read are left out and counted. Causes are read from the entries themselves; effects from the
 * lineage index, which follows the log (an effect appears a moment after it is submitted).
 */
@Injectable()
export class LineageQueries {
  constructor(
    private readonly store: ProposalStore,
    private readonly index: LineageIndex,
    private readonly view: ProposalView,
  ) {}

  async lineage(body: unknown, reader: Identity): Promise<{ lineage: LineageReply }> {
    const { proposal_id, depth = DEFAULT_DEPTH } = parseLineageRequest(body);
    const root = await this.load(proposal_id);
    if (!root) throw new AcpError('PROPOSAL_NOT_FOUND', `entry ${proposal_id} does not exist`, 'proposal_id');
    this.view.requireDomain(reader, root.proposal.domain);
    const walk = { omitted: 0, truncated: false };
    const causes = await this.walk(root, depth, reader, walk, (s) => s.proposal.caused_by ?? []);
    const effects = await this.walk(root, depth, reader, walk, (s) => this.index.effectsOf(s.proposal.proposal_id));
    return { lineage: { entry: node(root, 0), causes, effects, omitted: walk.omitted, truncated: walk.truncated } };
  }

  /** Breadth first from `root` along `next`, each entry once, up to `depth` links away. */
  private async walk(
    root: Submitted,
    depth: number,
    reader: Identity,
    walk: { omitted: number; truncated: boolean },
    next: (s: Submitted) => readonly string[],
  ): Promise<LineageNode[]> {
    const seen = new Set([root.proposal.proposal_id]);
    const found: LineageNode[] = [];
    let frontier = [root];
    for (let distance = 1; frontier.length > 0; distance++) {
      const ids = frontier.flatMap(next).filter((id) => !seen.has(id));
      if (ids.length > 0 && distance > Math.min(depth, MAX_LINEAGE_DEPTH)) {
        walk.truncated = true;
        break;
      }
      const following: Submitted[] = [];
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        if (found.length >= MAX_NODES) {
          walk.truncated = true;
          return found;
        }
        const s = await this.load(id);
        if (!s) continue;
        if (!this.view.mayReadDomain(reader, s.proposal.domain)) {
          walk.omitted++;
          continue;
        }
        found.push(node(s, distance));
        following.push(s);
      }
      frontier = following;
    }
    return found;
  }

  private async load(id: string): Promise<Submitted | undefined> {
    const { state } = await this.store.load(id);
    return state.status === 'initial' ? undefined : state;
  }
}

type Submitted = Exclude<ProposalState, { status: 'initial' }>;

function node(s: Submitted, distance: number): LineageNode {
  const p = s.proposal;
  return {
    proposal_id: p.proposal_id,
    type: p.type,
    domain: p.domain,
    author: p.author,
    status: s.status,
    outcome: s.status === 'pending' ? null : s.resolution.outcome,
    created_at: p.created_at,
    caused_by: [...(p.caused_by ?? [])],
    distance,
  };
}
