import type { ProposalStatus } from './contracts';
/**
 * Links between entries, checked at submission: causal lineage (11.3, `caused_by`: earlier
 * entries that motivated this one) and parent/child proposals (9.3, `depends_on`). The edge loads
 * the entries named (and, for children, their own children, transitively) and hands what it found
 * here; these rules decide. Pure: no loading, no clock.
 */
import { AcpError } from './errors';

/** What the edge found for an id: the entry's own links, or null when no such entry exists. */
export interface EntryLinks {
  depends_on: readonly string[];
  caused_by: readonly string[];
}
export type KnownEntries = ReadonlyMap<string, EntryLinks | null>;

/** 11.3: every cause is an existing entry other than this one. */
export function checkCauses(entryId: string, causedBy: readonly string[], known: KnownEntries): void {
  causedBy.forEach((id, i) => {
    if (id === entryId) throw new AcpError('SCHEMA_VIOLATION', 'caused_by must not contain the entry itself', `caused_by.${i}`);
    if (!known.get(id))
      throw new AcpError(
        'PROPOSAL_NOT_FOUND',
        `caused_by names ${id}, which does not exist (11.3: causes are earlier entries)`,
        `caused_by.${i}`,
      );
  });
}

/**
 * The children to load before `checkChildren` can decide: those of `dependsOn` and, transitively,
 * theirs, that `known` does not hold yet.
 */
export function childrenToLoad(dependsOn: readonly string[], known: KnownEntries): string[] {
  const missing: string[] = [];
  const seen = new Set<string>();
  const queue = [...dependsOn];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    if (!known.has(id)) {
      missing.push(id);
      continue;
    }
    queue.push(...(known.get(id)?.depends_on ?? []));
  }
  return missing;
}

/**
 * 9.3: no self-reference; every child exists when the parent is submitted, unless the parent has
 * an `expires_at` (then a child may follow, and the deadline ends the wait if it never does); no
 * cycle through the children's own `depends_on`. `known` must hold every id `childrenToLoad` named.
 */
export function checkChildren(parentId: string, dependsOn: readonly string[], expiresAt: string | null, known: KnownEntries): void {
  dependsOn.forEach((id, i) => {
    if (id === parentId) throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not contain the proposal itself', `depends_on.${i}`);
    if (!known.has(id)) throw new AcpError('INTERNAL', `child ${id} was not looked up`);
    if (known.get(id) === null && expiresAt === null) {
      throw new AcpError(
        'PROPOSAL_NOT_FOUND',
        `child ${id} does not exist: submit the children first, or give the parent an expires_at (9.3)`,
        `depends_on.${i}`,
      );
    }
  });
  const path = cycleThrough(parentId, dependsOn, known);
  if (path)
    throw new AcpError('SCHEMA_VIOLATION', `depends_on would close a cycle: ${[parentId, ...path].join(' -> ')} (9.3)`, 'depends_on');
}

/** A path of children from `start`'s children back to `start`, if there is one. */
function cycleThrough(start: string, dependsOn: readonly string[], known: KnownEntries): string[] | undefined {
  const seen = new Set<string>();
  const queue: Array<{ id: string; path: string[] }> = dependsOn.map((id) => ({ id, path: [id] }));
  while (queue.length > 0) {
    const { id, path } = queue.shift() as { id: string; path: string[] };
    if (id === start) return path;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const next of known.get(id)?.depends_on ?? []) queue.push({ id: next, path: [...path, next] });
  }
  return undefined;
}

/** One entry of a lineage reply (`acp.v1.lineage`): what it is and how it ended, without its payload. */
export interface LineageNode {
  proposal_id: string;
  type: string;
  domain: string;
  author: string;
  status: ProposalStatus;
  outcome: string | null;
  created_at: string;
  caused_by: string[];
  /** Links from the entry asked about (1: a direct cause or effect). */
  distance: number;
}
