/**
 * given(events).when(command).then(events) / thenThrows(code) / thenNothingHappened(), in the
 * style of emmett's DeciderSpecification, for the proposal decider.
 */
import { AcpError, AcpErrorCode } from '../lib/errors';
import type { ProposalCommand } from '../lib/proposal.commands';
import { DEFAULT_DECIDER_CONFIG, DeciderConfig, decide } from '../lib/proposal.decider';
import type { ProposalEvent } from '../lib/proposal.events';
import { ProposalState, evolveProposal, foldProposal, initialProposalState } from '../lib/proposal.state';

/** Runs commands one after another from the initial state and returns every event produced. */
export function history(commands: readonly ProposalCommand[], config: DeciderConfig = DEFAULT_DECIDER_CONFIG): ProposalEvent[] {
  const events: ProposalEvent[] = [];
  let state: ProposalState = initialProposalState;
  for (const c of commands) {
    for (const e of decide(c, state, config)) {
      events.push(e);
      state = evolveProposal(state, e);
    }
  }
  return events;
}

export function stateAfter(commands: readonly ProposalCommand[], config: DeciderConfig = DEFAULT_DECIDER_CONFIG): ProposalState {
  return foldProposal(history(commands, config));
}

export function given(events: readonly ProposalEvent[] | readonly ProposalCommand[], config: DeciderConfig = DEFAULT_DECIDER_CONFIG) {
  const evts = (
    events.length > 0 && 'command_id' in events[0] ? history(events as readonly ProposalCommand[], config) : events
  ) as ProposalEvent[];
  const state = foldProposal(evts);
  return {
    state,
    when(command: ProposalCommand) {
      const run = () => decide(command, state, config);
      return {
        /** The produced events, for further assertions. */
        events: run,
        /** The produced events match (partially, recursively) the expected ones. */
        then(expected: readonly Partial<Record<keyof ProposalEvent, unknown>>[]) {
          const produced = run();
          expect(produced).toMatchObject(expected as object[]);
          expect(produced).toHaveLength(expected.length);
          return { events: produced, state: foldProposal(produced, state) };
        },
        thenThrows(code: AcpErrorCode, field?: string, message?: RegExp) {
          let caught: unknown;
          try {
            run();
          } catch (e) {
            caught = e;
          }
          expect(caught).toBeInstanceOf(AcpError);
          const err = caught as AcpError;
          expect(err.code).toBe(code);
          if (field !== undefined) expect(err.field).toBe(field);
          if (message !== undefined) expect(err.message).toMatch(message);
          return err;
        },
        thenNothingHappened() {
          expect(run()).toEqual([]);
        },
      };
    },
  };
}
