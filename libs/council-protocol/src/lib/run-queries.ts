import { CandidateArtifact } from './candidate-artifact';
import { CouncilRole } from './contracts';
import { MemberDescriptor, memberRoles } from './member-descriptor';
import { RunData, StoredCandidate } from './state';

/** Small read-only queries over a run, shared by the controller rules. */

export function memberById(run: RunData, memberId: string): MemberDescriptor | undefined {
  return run.panel.find((m) => m.member_id === memberId);
}

export function rolesOf(run: RunData, memberId: string): readonly CouncilRole[] {
  const recorded = run.roles[memberId];
  if (recorded) return recorded;
  const m = memberById(run, memberId);
  return m ? memberRoles(m) : [];
}

/** Members that have not failed, in panel order. */
export function activeMembers(run: RunData): MemberDescriptor[] {
  return run.panel.filter((m) => !run.failed_members.includes(m.member_id));
}

export function activeMembersWithRole(run: RunData, role: CouncilRole): MemberDescriptor[] {
  return activeMembers(run).filter((m) => rolesOf(run, m.member_id).includes(role));
}

/** Latest version of every lineage of the current generation, in lineage order. */
export function currentCandidateIds(run: RunData): string[] {
  return run.lineage_order
    .map((id) => run.lineages[id])
    .filter((l) => l.generation === run.generation)
    .map((l) => l.versions[l.versions.length - 1]);
}

export function candidate(run: RunData, candidateId: string): CandidateArtifact {
  return run.candidates[candidateId].candidate;
}

export function storedCandidate(run: RunData, candidateId: string): StoredCandidate | undefined {
  return run.candidates[candidateId];
}

export function authorOf(run: RunData, candidateId: string): string | undefined {
  return run.candidates[candidateId]?.candidate.author_member_id;
}

export function tasksOf(run: RunData, round: number, stage: string) {
  return run.task_order.map((id) => run.tasks[id]).filter((t) => t.round === round && t.stage === stage && t.generation === run.generation);
}

export function latestConflictMap(run: RunData) {
  const maps = run.conflict_maps.filter((m) => m.generation === run.generation);
  return maps.length ? maps[maps.length - 1].conflict_map : undefined;
}
