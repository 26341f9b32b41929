/**
 * What the reactors must do, as pure functions of the state they fold from the log: the
 * resolver's (7, 9.3) and the sweeper's (8). Services only schedule and run what these say.
 */
import { childOutcomeOf } from './domain-scoped-resolution';
import type { ChildOutcome } from './wire-format';
import { deriveEventId } from './ids';
import { DEFAULT_DECIDER_CONFIG, type DeciderConfig } from './proposal.decider';
import { pendingResolution } from './proposal.projection';
import type { ProposalState } from './proposal.state';
import { expiryDeadline } from './timeout-and-expiration';
import { instantOf } from './timestamps';

export type ResolverReaction =
  | { readonly kind: 'resolve'; readonly proposal_id: string }
  | {
      readonly kind: 'record-child-outcome';
      readonly proposal_id: string;
      readonly child_proposal_id: string;
      readonly outcome: ChildOutcome;
    };

/**
 * The resolver's reactions to a proposal's state: resolve it once its quorum policy is met (or,
 * for a parent, once every child has a final outcome), and tell each parent waiting for it its
 * final outcome. `parents` are the proposals that named this one in `depends_on`, in log order.
 */
export function resolverReactions(
  state: ProposalState,
  parents: readonly string[],
  config: DeciderConfig = DEFAULT_DECIDER_CONFIG,
): ResolverReaction[] {
  const reactions: ResolverReaction[] = [];
  const due = pendingResolution(state, config);
  if (due) reactions.push({ kind: 'resolve', proposal_id: due.proposal_id });
  const outcome = finalChildOutcome(state);
  if (outcome && state.status !== 'initial') {
    for (const parent of parents) {
      reactions.push({ kind: 'record-child-outcome', proposal_id: parent, child_proposal_id: state.proposal.proposal_id, outcome });
    }
  }
  return reactions;
}

/** A child's outcome once it is final (9.3): resolved or expired; an escalation is not final yet. */
export function finalChildOutcome(state: ProposalState): ChildOutcome | undefined {
  return state.status === 'resolved' || state.status === 'expired' ? childOutcomeOf(state.resolution) : undefined;
}

/**
 * The sweeper's deadline for a proposal (8.1, 15.5): the first whole millisecond at or after
 * `expires_at` + grace, so a timer in milliseconds never fires before the decider agrees the
 * proposal has expired (sub-millisecond digits round up). Undefined when it does not expire.
 */
export function expiryDeadlineMs(expiresAt: string | null, graceMs: number): number | undefined {
  const deadline = expiryDeadline(expiresAt, graceMs);
  if (deadline === null) return undefined;
  const ns = instantOf(deadline);
  const ms = ns / 1_000_000n + (ns % 1_000_000n > 0n ? 1n : 0n);
  return Number(ms);
}

/**
 * A reactor's command id, derived from the event that made the reaction due: a replayed or raced
 * reaction is the same command, its events have the same ids, and the log keeps them once.
 * `slot` tells apart the reactions one event causes (0, 1, ...). The offset keeps the derived
 * ids clear of the ids of the trigger's own command's events.
 */
export function reactionCommandId(triggerEventId: string, slot: number): string {
  return deriveEventId(triggerEventId, (slot + 1) * 2 ** 32);
}
