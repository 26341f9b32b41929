import fc from 'fast-check';
import { CouncilEvent } from './events';
import { CouncilRunState, EMPTY_RUN, evolveRun, evolveRunInPlace, foldRun } from './state';
import { stableJson } from './validation';
import { conflictMapFor, defaultBehaviour, drive, highIssue, panel, roundOf, startCommand, styleIssue } from '../testing/council-fixtures';

/** The events of a few driven runs: clean, two rounds of issues, and one with a failing member. */
function runsOfEvents(): CouncilEvent[][] {
  const clean = drive(startCommand(), defaultBehaviour());
  const twoRounds = drive(
    startCommand(),
    defaultBehaviour({ issues: (_r, round) => (round <= 2 ? [highIssue(), styleIssue()] : []), score: (_r, round) => 2 + round }),
  );
  const failing = drive(startCommand({ panel: panel({ moderator: true, fallbackChair: true }) }), (req, memberId, state) =>
    memberId === 'member-skeptic-01' && roundOf(req) === 1 && req.stage === 'review'
      ? { kind: 'fail' }
      : req.stage === 'conflict-map'
        ? { kind: 'reply', artifact: conflictMapFor(req, roundOf(req)) }
        : defaultBehaviour()(req, memberId, state),
  );
  return [clean.events, twoRounds.events, failing.events];
}

describe('the run state folds copy on write: a fold never changes a state it started from', () => {
  const runs = runsOfEvents();

  it('given any state of a run and any later events, when they are folded (one copy, then in place), then the result is the state of the run at that point and no earlier state changed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: runs.length - 1 }), fc.nat(), fc.nat(), (r, a, b) => {
        const events = runs[r];
        // Every state of the run, each folded by evolveRun (a copy per event).
        const states: CouncilRunState[] = [];
        let s: CouncilRunState = EMPTY_RUN;
        for (const e of events) states.push((s = evolveRun(s, e)));
        const snapshots = states.map((x) => stableJson(x));
        const from = a % events.length;
        const to = from + (b % (events.length - from));
        const folded = foldRun(events.slice(from + 1, to + 1), states[from]);
        expect(stableJson(folded)).toBe(snapshots[to]);
        // In place on the result when it is a copy (no events folded: it is the state itself).
        if (to > from) for (const e of events.slice(to + 1)) evolveRunInPlace(folded, e);
        expect(states.map((x) => stableJson(x))).toEqual(snapshots);
      }),
      { numRuns: 25 },
    );
  });

  it('given a whole run folded at once, then it equals the run folded one copied event at a time', () => {
    for (const events of runs) {
      let s: CouncilRunState = EMPTY_RUN;
      for (const e of events) s = evolveRun(s, e);
      expect(stableJson(foldRun(events))).toBe(stableJson(s));
    }
  });
});
