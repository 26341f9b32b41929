import { PROPOSAL_EVENT_TYPES, ProposalEvent } from '@conclave/acp-protocol';
import { AcpBridgeOptions, DeliberationRequest, deliberationRequest } from './acp-bridge';
import { COUNCIL_EVENT_TYPES as E } from './contracts';
import { AcpOrigin, CouncilEvent } from './events';
import { clone } from './validation';

/**
 * What the council service does about ACP (the bridge, an extension), as a fold over the one
 * log: ACP's `proposal-<id>` streams and the Council's `council-run-<id>` streams, in log order.
 * Three reactions come due, each cleared by the event that shows it done, so a replay or a
 * restart does again only what the log does not show done, and each reaction is idempotent when
 * two replicas race on it:
 *
 * - `start-run`: an ACP proposal asks for deliberation (`payload.deliberate`); done at the
 *   RunStarted of `acp_<proposal_id>`.
 * - `bridge`: a run started from ACP ended with a DecisionRecord; its decision goes back to ACP,
 *   `caused_by` the proposal that asked. Done at DecisionBridged.
 * - `resolve-value-choice`: the ACP escalation of a run's bridged proposal was resolved by a
 *   human; the run takes the choice (ResolveValueChoice). Done at ValueChoiceResolved.
 *
 * Pure: the state is the caller's, changed in place (the reactor's private fold).
 */
export type AcpReaction =
  | ({ kind: 'start-run'; key: string } & DeliberationRequest)
  | { kind: 'bridge'; key: string; run_id: string; requested_by: string; origin_proposal_id: string; options: AcpBridgeOptions }
  | {
      kind: 'resolve-value-choice';
      key: string;
      run_id: string;
      outcome: string;
      chosen_by: string;
      note: string | null;
      acp_proposal_id: string;
      acp_event_id: string;
    };

export interface AcpReactionState {
  /** Runs started from ACP whose decision has not gone back yet: run id → origin. */
  origins: Record<string, AcpOrigin>;
  /** Bridged proposals escalated for a value choice, until resolved: ACP proposal id → run id. */
  awaiting: Record<string, string>;
  /** Reactions due, by key. */
  due: Record<string, AcpReaction>;
}

export function emptyAcpReactions(): AcpReactionState {
  return { origins: {}, awaiting: {}, due: {} };
}

const startKey = (runId: string) => `start-run:${runId}`;
const bridgeKey = (runId: string) => `bridge:${runId}`;
const choiceKey = (runId: string) => `value-choice:${runId}`;

/** Folds one event of either category into the state; returns the reactions it made due. */
export function applyAcpReactionEvent(state: AcpReactionState, event: ProposalEvent | CouncilEvent): AcpReaction[] {
  switch (event.type) {
    case PROPOSAL_EVENT_TYPES.ProposalSubmitted: {
      const request = deliberationRequest(event.data);
      if (!request) return [];
      return due(state, { kind: 'start-run', key: startKey(request.run_id), ...request });
    }
    case PROPOSAL_EVENT_TYPES.EscalationResolved: {
      const runId = state.awaiting[event.data.proposal_id];
      if (runId === undefined) return [];
      delete state.awaiting[event.data.proposal_id];
      const r = event.data.resolution;
      return due(state, {
        kind: 'resolve-value-choice',
        key: choiceKey(runId),
        run_id: runId,
        outcome: r.outcome,
        chosen_by: r.resolved_by ?? event.actor,
        note: r.note ?? null,
        acp_proposal_id: event.data.proposal_id,
        acp_event_id: event.event_id,
      });
    }
    // Ended in ACP without a human's resolution (a ladder default, expiry): no value choice was made.
    case PROPOSAL_EVENT_TYPES.EscalationDefaulted:
    case PROPOSAL_EVENT_TYPES.ProposalExpired:
    case PROPOSAL_EVENT_TYPES.ProposalResolved:
      delete state.awaiting[event.data.proposal_id];
      return [];
    case E.RunStarted: {
      delete state.due[startKey(event.correlation_id)];
      if (event.data.acp_origin) state.origins[event.correlation_id] = clone(event.data.acp_origin);
      return [];
    }
    case E.RunTerminated: {
      const origin = state.origins[event.correlation_id];
      if (!origin) return [];
      // Nothing to post without a DecisionRecord: the run's end is on COUNCIL_DECISIONS only.
      if (event.data.decision_id === null) {
        delete state.origins[event.correlation_id];
        return [];
      }
      return due(state, {
        kind: 'bridge',
        key: bridgeKey(event.correlation_id),
        run_id: event.correlation_id,
        requested_by: origin.author,
        origin_proposal_id: origin.proposal_id,
        options: origin.bridge,
      });
    }
    case E.DecisionBridged: {
      const runId = event.correlation_id;
      delete state.origins[runId];
      delete state.due[bridgeKey(runId)];
      if (event.data.escalated) state.awaiting[event.data.proposal_id] = runId;
      return [];
    }
    case E.ValueChoiceResolved:
      delete state.due[choiceKey(event.correlation_id)];
      return [];
    default:
      return [];
  }
}

/** What the audit record of a reaction's refusal names: its command, who it acts for, the ACP proposal it came from. */
export interface AcpReactionCause {
  command: string;
  actor: string;
  proposal_id: string;
  /**
   * The record's id, derived from the reaction (its key, and for a value choice the resolution
   * event): every replica and every replay that refuses it records the same id, so the audit
   * chain holds it once.
   */
  record_id: string;
}

/**
 * The cause of a reaction, for the audit of its refusal: a deliberation request is the ACP
 * author's, a bridge is the owner's who asked for the run, a value choice is the resolver's.
 */
export function acpReactionCause(r: AcpReaction): AcpReactionCause {
  switch (r.kind) {
    case 'start-run':
      return { command: 'council.acp.start-run', actor: r.actor, proposal_id: r.acp_origin.proposal_id, record_id: `council-acp:${r.key}` };
    case 'bridge':
      return { command: 'council.acp.bridge', actor: r.requested_by, proposal_id: r.origin_proposal_id, record_id: `council-acp:${r.key}` };
    case 'resolve-value-choice':
      return {
        command: 'council.acp.value-choice',
        actor: r.chosen_by,
        proposal_id: r.acp_proposal_id,
        record_id: `council-acp:${r.key}:${r.acp_event_id}`,
      };
  }
}

/** A reaction refused for good (a typed refusal): forget it. */
export function settleAcpReaction(state: AcpReactionState, key: string): void {
  delete state.due[key];
}

function due(state: AcpReactionState, reaction: AcpReaction): AcpReaction[] {
  state.due[reaction.key] = reaction;
  return [reaction];
}
