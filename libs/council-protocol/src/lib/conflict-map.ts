import { CONFLICT_TYPES, ConflictType, DecisionImpact, LEVELS_OF_THREE } from './contracts';
import { fail, join, optStr, record, str, strings, oneOf, arr } from './validation';

export const CONFLICT_STATUSES = ['unresolved', 'resolved'] as const;
export type ConflictStatus = (typeof CONFLICT_STATUSES)[number];

/** One classified disagreement (spec 8.5). `value_owner` (extension) names who decides a value conflict. */
export interface Conflict {
  conflict_id: string;
  type: ConflictType;
  positions: string[];
  description: string;
  discriminating_evidence?: string;
  value_owner?: string;
  decision_impact: DecisionImpact;
  status: ConflictStatus;
}

/** ConflictMap (spec 8.5). `conflict_map_id` is an extension so decisions can cite the map. */
export interface ConflictMap {
  conflict_map_id: string;
  conflicts: Conflict[];
}

function parseConflict(input: unknown, path: string): Conflict {
  const o = record(input, path);
  const c: Conflict = {
    conflict_id: str(o, 'conflict_id', path),
    type: oneOf(o, 'type', path, CONFLICT_TYPES),
    positions: strings(o, 'positions', path, { nonEmpty: true }),
    description: str(o, 'description', path),
    decision_impact: oneOf(o, 'decision_impact', path, LEVELS_OF_THREE),
    status: oneOf(o, 'status', path, CONFLICT_STATUSES),
  };
  const evidence = optStr(o, 'discriminating_evidence', path);
  const owner = optStr(o, 'value_owner', path);
  if (evidence !== undefined) c.discriminating_evidence = evidence;
  if (owner !== undefined) c.value_owner = owner;
  // Checklist item 7: classified conflicts carry discriminating evidence or value ownership.
  if (c.type === 'value') {
    if (evidence === undefined && owner === undefined)
      fail(join(path, 'value_owner'), 'a value conflict names its value owner (or discriminating evidence)');
  } else if (evidence === undefined) {
    fail(join(path, 'discriminating_evidence'), 'must say what evidence would resolve the conflict');
  }
  return c;
}

export function parseConflictMap(input: unknown, path = ''): ConflictMap {
  const o = record(input, path);
  const conflicts = arr(o, 'conflicts', path).map((c, i) => parseConflict(c, join(join(path, 'conflicts'), i)));
  const ids = new Set<string>();
  conflicts.forEach((c, i) => {
    if (ids.has(c.conflict_id)) fail(join(join(join(path, 'conflicts'), i), 'conflict_id'), 'duplicate conflict_id');
    ids.add(c.conflict_id);
  });
  return { conflict_map_id: str(o, 'conflict_map_id', path), conflicts };
}

/** Value conflicts are not resolved by votes (spec 8.5): an unresolved one needs the human owner. */
export function unresolvedValueConflicts(map: ConflictMap | undefined): Conflict[] {
  return map ? map.conflicts.filter((c) => c.type === 'value' && c.status === 'unresolved') : [];
}
