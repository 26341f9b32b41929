import {
  isTerminalEvent,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  ProposalCommand,
  ProposalEvent,
  ProposalState,
} from '@conclave/acp-protocol';
import type { AggregateCacheStats, CommandOutcome } from '@conclave/event-log';
import { ConclaveMetrics, METRICS } from './metrics';

const LADDER_STEPS: Partial<Record<string, string>> = {
  [PROPOSAL_EVENT_TYPES.EscalationRouted]: 'routed',
  [PROPOSAL_EVENT_TYPES.EscalationReminded]: 'reminded',
  [PROPOSAL_EVENT_TYPES.EscalationReassigned]: 'reassigned',
  [PROPOSAL_EVENT_TYPES.EscalationSignedOff]: 'signed_off',
  [PROPOSAL_EVENT_TYPES.EscalationDefaulted]: 'defaulted',
};

/**
 * What one recorded command did, in the process that recorded it (a retried or losing append
 * records nothing, so each decision is counted once across replicas): decisions by outcome and
 * trigger, escalation steps, and how late after `expires_at` an expiry was recorded.
 */
export function proposalOutcomeRecorder(metrics: ConclaveMetrics) {
  const decisions = metrics.counter(METRICS.decisions);
  const steps = metrics.counter(METRICS.ladderSteps);
  const lateness = metrics.histogram(METRICS.expiryLateness);
  return (command: ProposalCommand, outcome: CommandOutcome<ProposalState, ProposalEvent>): void => {
    if (outcome.duplicate) return;
    for (const event of outcome.events) {
      if (isTerminalEvent(event)) {
        const r = event.data.resolution;
        decisions.inc({ outcome: r.outcome, trigger: r.trigger });
        const expiresAt = outcome.state.status === 'initial' ? null : outcome.state.proposal.expires_at;
        if (command.type === PROPOSAL_COMMAND_TYPES.ExpireProposal && expiresAt) {
          lateness.observe(Math.max(0, Date.parse(command.now) - Date.parse(expiresAt)) / 1000);
        }
      }
      const step = LADDER_STEPS[event.type];
      if (step) steps.inc({ step });
    }
  };
}

/** The proposal cache's hits, misses and size, read at scrape time. */
export function trackProposalCache(metrics: ConclaveMetrics, stats: AggregateCacheStats): void {
  metrics.observeTotal(METRICS.cacheLookups, { result: 'hit' }, () => stats.hits);
  metrics.observeTotal(METRICS.cacheLookups, { result: 'miss' }, () => stats.misses);
  metrics.observe(METRICS.cacheEntries, {}, () => stats.entries);
}
