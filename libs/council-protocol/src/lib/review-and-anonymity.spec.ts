import fc from 'fast-check';
import { MEMBER_ID_PATTERN } from './contracts';
import { parseMemberDescriptor } from './member-descriptor';
import { mentionsMemberId, scrubMemberIds } from './review-and-anonymity';
import { StartedRun } from './state';
import { Behaviour, defaultBehaviour, drive, highIssue, member, panel, roundOf, startCommand } from '../testing/council-fixtures';

/** Spec 11.1: the blind surface names no member, and scrubbing never touches the controller's own refs. */
describe('spec 11.1 blind surface: scrubbing member ids', () => {
  it('given single-letter member ids, when a text with blind refs is scrubbed, then the refs survive and the ids go', () => {
    const text = 'anon-A-v1 beats anon-B-v2 (review-3#issue-1); Candidate A was written by A and cand-b-v1 by b';
    expect(scrubMemberIds(text, ['A', 'B', 'a', 'b'])).toBe(
      'anon-A-v1 beats anon-B-v2 (review-3#issue-1); Candidate A was written by [member] and cand-[member]-v1 by [member]',
    );
  });

  it('given an id inside a longer word, when scrubbed, then the word is kept (ids are whole parts, not substrings)', () => {
    expect(scrubMemberIds('a plan for x-ray and ab', ['a', 'x'])).toBe('[member] plan for [member]-ray and ab');
    expect(scrubMemberIds('by m-1 and m-10', ['m-1', 'm-10'])).toBe('by [member] and [member]');
  });

  it('given a member id written in another letter case, when scrubbed, then it goes too, and the blind refs stay', () => {
    const text = 'As BUILDER-01 (Builder-01 on the wiki) I prefer anon-A-v1; cand-Builder-01-v2 agrees';
    expect(scrubMemberIds(text, ['builder-01'])).toBe('As [member] ([member] on the wiki) I prefer anon-A-v1; cand-[member]-v2 agrees');
    expect(mentionsMemberId('ask SKEPTIC', 'skeptic')).toBe(true);
    expect(scrubMemberIds('anon-A-v1 and Candidate A by a', ['a'])).toBe('anon-A-v1 and Candidate A by [member]');
  });

  it('given member ids that are words of the controller’s instructions, when driven, then every task’s instructions reach the member intact while the members’ own text is scrubbed', () => {
    // `each` is a word of the review instructions, `only` and `keep` of the synthesis
    // instructions; `return` opens the conflict-map, frame-check, revision and synthesis
    // instructions. None is a field name or fixed value of the blind surface (StartRun refuses those).
    const wordPanel = [
      member('each', 'builder'),
      member('only', 'skeptic', undefined, 'shared-model-b'),
      member('keep', 'operator'),
      member('return', 'chair', ['chair'], 'chair-model'),
      member('outsider-01', 'outsider', ['frame-observer'], 'outsider-model'),
    ];
    const plainPanel = panel({ frameObserver: true });
    const members = defaultBehaviour({ issues: (ref, round) => (round === 1 && ref === 'anon-A-v1' ? [highIssue()] : []) });
    // A review id per round, so the round after the revision reviews again without a clash.
    const behaviour: Behaviour = (req, id, st) => {
      const reply = members(req, id, st);
      if (req.stage !== 'review' || reply.kind !== 'reply') return reply;
      const reviews = reply.artifact as { review_id: string }[];
      return { ...reply, artifact: reviews.map((r) => ({ ...r, review_id: `${r.review_id}-r${roundOf(req)}` })) };
    };
    const worded = drive(startCommand({ panel: wordPanel }), behaviour);
    const plain = drive(startCommand({ panel: plainPanel }), behaviour);
    expect(worded.refusals).toEqual([]);
    const instructionsByStage = (d: typeof worded) =>
      Object.fromEntries(d.requests.map((r) => [r.stage, r.inputs['instructions']]).filter(([, i]) => i !== undefined));
    const controllerWords = instructionsByStage(plain);
    expect(Object.keys(controllerWords).sort()).toEqual(['conflict-map', 'frame-check', 'review', 'revision', 'synthesis']);

    // The controller's instructions: the same words whoever sits on the panel, its ids left in them.
    for (const req of worded.requests.filter((r) => r.inputs['instructions'] !== undefined)) {
      expect(req.inputs['instructions']).toBe(controllerWords[req.stage]);
    }
    expect(instructionsByStage(worded)).toEqual(controllerWords);
    const named = (stage: string) =>
      wordPanel.map((m) => m.member_id).filter((id) => mentionsMemberId(controllerWords[stage] as string, id));
    expect(named('review')).toEqual(['each']);
    expect(named('synthesis')).toEqual(['only', 'keep', 'return']);

    // The members' text in the same inputs: each author's position named it, and is scrubbed.
    const reviewed = worded.requests.filter((r) => r.stage === 'review').flatMap((r) => r.inputs['candidates'] as { position: string }[]);
    expect(reviewed.length).toBeGreaterThan(0);
    for (const c of reviewed) {
      expect(c.position).toMatch(/\(\[member\] view\)/);
      for (const m of wordPanel) expect(mentionsMemberId(c.position, m.member_id)).toBe(false);
    }
  });

  it('given an already scrubbed text, when scrubbed again, then nothing changes (idempotent)', () => {
    const once = scrubMemberIds('member said so', ['member']);
    expect(scrubMemberIds(once, ['member'])).toBe(once);
  });

  const idArb = fc.stringMatching(/^[A-Za-z0-9_]{1,3}(-[A-Za-z0-9_]{1,3})?$/).filter((id) => MEMBER_ID_PATTERN.test(id));
  const refArb = fc.oneof(
    fc.tuple(fc.stringMatching(/^[A-Z]{1,2}$/), fc.integer({ min: 1, max: 9 })).map(([l, v]) => `anon-${l}-v${v}`),
    fc.tuple(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 5 })).map(([r, i]) => `review-${r}#issue-${i}`),
    fc.integer({ min: 1, max: 30 }).map((r) => `review-${r}`),
    fc.stringMatching(/^[A-Z]{1,2}$/).map((l) => `Candidate ${l}`),
  );
  const blindRefs = (s: string) => s.match(/anon-[A-Z]+-v\d+|review-\d+(?:#issue-\d+)?|Candidate [A-Z]+/g) ?? [];

  it('given ids made of or edged by separators (found by the property: `7` and `_` in "7_"), then they are not member ids', () => {
    for (const id of ['_', '-', '7_', '_b', 'a-']) expect(MEMBER_ID_PATTERN.test(id)).toBe(false);
    for (const id of ['7', 'a_b', 'member-builder-01', 'A']) expect(MEMBER_ID_PATTERN.test(id)).toBe(true);
  });

  it('property: for any member ids, scrubbing never corrupts an anonymous ref and leaves no member id behind, in any letter case', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(idArb, { minLength: 1, maxLength: 6 }).chain((ids) =>
          fc.tuple(
            fc.constant(ids),
            // The panel's own ids, in any letter case, among other words.
            fc.array(
              fc.oneof(
                refArb,
                idArb,
                fc.constantFrom(...ids.flatMap((id) => [id, id.toUpperCase(), id.toLowerCase()])),
                fc.constantFrom('and', 'by', ',', 'the'),
              ),
              { maxLength: 20 },
            ),
          ),
        ),
        ([ids, words]) => {
          const text = words.join(' ');
          const out = scrubMemberIds(text, ids);
          expect(blindRefs(out)).toEqual(blindRefs(text));
          for (const id of ids)
            expect(mentionsMemberId(out.replace(/anon-[A-Z]+-v\d+|review-\d+(?:#issue-\d+)?|Candidate [A-Z]+/g, ' '), id)).toBe(false);
        },
      ),
    );
  });

  it('given a member id shaped like a blind ref, when the descriptor is parsed, then SCHEMA_VIOLATION on member_id', () => {
    for (const id of ['anon-A-v1', 'review-2']) {
      expect(() => parseMemberDescriptor({ ...member('x'), member_id: id }, 'panel[0]')).toThrow(
        expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'panel[0].member_id' }),
      );
    }
  });

  it('given a panel of single-letter member ids (A, B, a, b), when driven, then reviews are accepted and the run decides', () => {
    const panel = [member('A'), member('B'), member('a'), member('b', 'chair', ['chair'])];
    const d = drive(startCommand({ panel }), defaultBehaviour());
    expect(d.refusals).toEqual([]);
    const run = d.state as StartedRun;
    expect(run.review_order.length).toBe(6);
    expect(d.state.status === 'terminated' && d.state.terminal.terminal_state).toBe('decided');
    for (const req of d.requests.filter((r) => r.stage === 'review')) {
      for (const c of req.inputs['candidates'] as { candidate_ref: string; label: string }[]) {
        expect(c.candidate_ref).toMatch(/^anon-[A-Z]+-v\d+$/);
        expect(c.label).toMatch(/^Candidate [A-Z]+$/);
      }
    }
  });
});
