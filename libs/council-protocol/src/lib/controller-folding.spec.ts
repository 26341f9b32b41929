import fc from 'fast-check';
import { controllerEvents, decideNext, decideNextFolding, taskRequests } from './controller';
import { CouncilRunState, EMPTY_RUN, foldRun } from './state';
import { clone, stableJson } from './validation';
import { defaultBehaviour, drive, highIssue, startCommand } from '../testing/council-fixtures';

/** Every state a driven run passes through, with the time the next step is decided at. */
function statesOfARun(issueRounds: number): { state: CouncilRunState; now: string }[] {
  const d = drive(
    startCommand(),
    defaultBehaviour({ issues: (_r, round) => (round <= issueRounds ? [highIssue()] : []), score: (_r, round) => 2 + round }),
  );
  const states: { state: CouncilRunState; now: string }[] = [];
  let state: CouncilRunState = EMPTY_RUN;
  for (const e of d.events) {
    state = foldRun([e], state);
    states.push({ state, now: e.occurred_at });
  }
  return states;
}

describe('spec 7.1 the controller decides on a folded run; decideNextFolding also hands back the run after its events', () => {
  const runs = [0, 1, 2].map(statesOfARun);

  it('given any state of a run, when the controller decides, then the state it returns is its events folded into the input, and the input is untouched', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: runs.length - 1 }), fc.nat(), (r, i) => {
        const { state, now } = runs[r][i % runs[r].length];
        const before = stableJson(state);
        const step = decideNextFolding(state, now);
        expect(stableJson(state)).toBe(before);
        expect(step.actions.map((a) => a.event)).toEqual(decideNext(state, now).map((a) => a.event));
        expect(stableJson(step.state)).toBe(stableJson(foldRun(controllerEvents(step.actions), state)));
        if (step.actions.length === 0) expect(step.state).toBe(state);
      }),
      { numRuns: 100 },
    );
  });

  it('given a private copy handed over (owned), when the controller decides, then it folds in place and decides exactly as on a shared state', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: runs.length - 1 }), fc.nat(), (r, i) => {
        const { state, now } = runs[r][i % runs[r].length];
        const shared = decideNextFolding(state, now);
        const copy = clone(state);
        const owned = decideNextFolding(copy, now, {}, true);
        expect(owned.actions.map((a) => a.event)).toEqual(shared.actions.map((a) => a.event));
        expect(stableJson(owned.state)).toBe(stableJson(shared.state));
        // The events and task requests handed out never alias the state folded in place.
        const handedOut = () => stableJson([controllerEvents(owned.actions), taskRequests(owned.actions)]);
        const before = handedOut();
        const later = decideNextFolding(owned.state, now, {}, true);
        foldRun(controllerEvents(later.actions), later.state);
        expect(handedOut()).toBe(before);
      }),
      { numRuns: 100 },
    );
  });
});
