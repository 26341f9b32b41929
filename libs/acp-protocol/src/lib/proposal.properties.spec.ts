/**
 * Property tests (fast-check; the seed and path are printed on failure) of the decider's
 * invariants: weights in [0, 1], outcome independent of response order, at most one resolution,
 * nothing but a human resolution after a terminal state, deterministic folds, ties escalate;
 * and every wire object produced validates against the Appendix B JSON Schemas (ajv 2020-12).
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import * as fs from 'fs';
import * as path from 'path';
import { P1, at, challenge, endorse, escalate, expire, min, resolveByQuorum, resolveEscalation, submit, ulidOf } from '../testing/fixtures';
import { AcpError } from './errors';
import { DEFAULT_DECIDER_CONFIG, decide } from './proposal.decider';
import type { ProposalCommand } from './proposal.commands';
import { handleProposalCommand } from './proposal.handler';
import { pendingResolution, projectProposal, statusAfter } from './proposal.projection';
import { ProposalState, evolveProposal, foldProposal, initialProposalState } from './proposal.state';
import type { DecisionEvent, Proposal } from './wire-format';
import type { ProposalEvent } from './proposal.events';

const schemaDir = path.join(__dirname, '../../schemas');
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
const validateProposal = ajv.compile(JSON.parse(fs.readFileSync(path.join(schemaDir, 'proposal.schema.json'), 'utf8')));
const validateDecision = ajv.compile(JSON.parse(fs.readFileSync(path.join(schemaDir, 'decision-event.schema.json'), 'utf8')));

function expectSchemaValid(p: Proposal | DecisionEvent, kind: 'proposal' | 'decision'): void {
  const v = kind === 'proposal' ? validateProposal : validateDecision;
  const ok = v(JSON.parse(JSON.stringify(p)));
  if (!ok) throw new Error(`${kind} does not validate: ${JSON.stringify(v.errors)}\n${JSON.stringify(p)}`);
}

const factor = fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 1, 0.1, 0.2, 0.3, 0.5, 0.9));
const responseArb = fc.record({
  endorse: fc.boolean(),
  domain_authority: factor,
  confidence: factor,
  trust_score: factor,
});
const participants = (n: number) => Array.from({ length: n }, (_, i) => `agent-${i}`);

function responseCommands(
  rs: { endorse: boolean; domain_authority: number; confidence: number; trust_score: number }[],
): ProposalCommand[] {
  return rs.map((r, i) => (r.endorse ? endorse : challenge)(participants(rs.length)[i], r, { now: at(i + 1) }));
}

/** Applies commands, swallowing typed rejections (a rejected command appends nothing). */
function run(commands: ProposalCommand[]): { state: ProposalState; events: ProposalEvent[]; decisions: DecisionEvent[] } {
  let state: ProposalState = initialProposalState;
  const events: ProposalEvent[] = [];
  const decisions: DecisionEvent[] = [];
  for (const c of commands) {
    try {
      const r = handleProposalCommand(state, c);
      state = r.state;
      events.push(...r.events);
      decisions.push(...r.decisions);
    } catch (e) {
      if (!(e instanceof AcpError)) throw e;
    }
  }
  return { state, events, decisions };
}

describe('invariants (property tests)', () => {
  it('outcome independent of response order (13.3): any permutation resolves the same way', () => {
    fc.assert(
      fc.property(fc.array(responseArb, { minLength: 1, maxLength: 8 }), fc.func(fc.integer()), (rs, key) => {
        const n = rs.length;
        const cmds = responseCommands(rs);
        const shuffled = [...cmds].sort((a, b) => key(a) - key(b));
        const one = run([submit({ quorum: n, expires_at: null }), ...cmds, resolveByQuorum()]);
        const two = run([submit({ quorum: n, expires_at: null }), ...shuffled, resolveByQuorum()]);
        const r1 = one.state.status === 'initial' ? null : projectProposal(one.state).resolution;
        const r2 = two.state.status === 'initial' ? null : projectProposal(two.state).resolution;
        expect(r2).toEqual(r1);
        expect(one.state.status).toBe(two.state.status);
      }),
    );
  });

  it('6.1 every recorded weight is in [0, 1], for any doubles (NaN, infinities) handed to the decider', () => {
    fc.assert(
      fc.property(fc.double(), fc.double(), fc.double(), (a, c, t) => {
        const s = run([submit(), endorse('x', { domain_authority: a, confidence: c, trust_score: t })]).state;
        const w = projectProposal(s).responses[0].weight;
        expect(w >= 0 && w <= 1).toBe(true);
      }),
    );
  });

  const commandArb: fc.Arbitrary<ProposalCommand> = fc.oneof(
    fc.tuple(fc.integer({ min: 0, max: 5 }), responseArb).map(([i, r]) => (r.endorse ? endorse : challenge)(`agent-${i}`, r)),
    fc.constant(0).map(() => resolveByQuorum()),
    fc.integer({ min: 0, max: 10 }).map((m) => expire(min(m))),
    fc.constant(0).map(() => escalate()),
    fc.constantFrom('approved' as const, 'rejected' as const).map((o) => resolveEscalation(o)),
    fc.constant(0).map(() => endorse('agent-risk-001', { domain_authority: 1, confidence: 1, trust_score: 1 })),
  );
  const submitArb = fc.record({
    quorum: fc.integer({ min: 1, max: 4 }),
    type: fc.constantFrom('proposal' as const, 'proposal' as const, 'observation' as const),
  });

  it('at most one automated resolution per proposal, and after a terminal state only a human resolution is accepted', () => {
    fc.assert(
      fc.property(submitArb, fc.array(commandArb, { maxLength: 25 }), (s, cmds) => {
        const { events } = run([submit(s), ...cmds]);
        const automated = events.filter(
          (e) => e.type === 'ProposalResolved' || e.type === 'ProposalEscalated' || e.type === 'ProposalExpired',
        );
        expect(automated.length).toBeLessThanOrEqual(1);
        expect(events.filter((e) => e.type === 'EscalationResolved').length).toBeLessThanOrEqual(1);
        const firstTerminal = events.findIndex((e) => (automated as ProposalEvent[]).includes(e));
        if (firstTerminal >= 0) {
          const after = events.slice(firstTerminal + 1).map((e) => e.type);
          expect(after.every((t) => t === 'EscalationResolved')).toBe(true);
        }
      }),
    );
  });

  it('folding the same events always gives the same state, and each command is deterministic', () => {
    fc.assert(
      fc.property(submitArb, fc.array(commandArb, { maxLength: 20 }), (s, cmds) => {
        const all = [submit(s), ...cmds];
        const first = run(all);
        expect(foldProposal(first.events)).toEqual(first.state);
        expect(foldProposal(JSON.parse(JSON.stringify(first.events)))).toEqual(first.state);
        const second = run(all);
        expect(JSON.stringify(second.events)).toBe(JSON.stringify(first.events));
      }),
    );
  });

  it('4.1 the status an index derives from events alone agrees with the folded state', () => {
    fc.assert(
      fc.property(submitArb, fc.array(commandArb, { maxLength: 20 }), (s, cmds) => {
        const { events, state } = run([submit(s), ...cmds]);
        const status = events.reduce<ProposalState['status'] | undefined>((before, e) => statusAfter(e, before as never), undefined);
        expect(status).toBe(state.status);
      }),
    );
  });

  it('10.1 an exact tie always escalates, at quorum and at timeout', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(factor, factor, factor), { minLength: 1, maxLength: 5 }), fc.boolean(), (fs_, atTimeout) => {
        const cmds: ProposalCommand[] = [];
        fs_.forEach(([a, c, t], i) => {
          cmds.push(endorse(`e${i}`, { domain_authority: a, confidence: c, trust_score: t }));
          cmds.push(challenge(`c${i}`, { domain_authority: c, confidence: t, trust_score: a }));
        });
        const quorum = atTimeout ? cmds.length + 1 : cmds.length;
        const { state } = run([submit({ quorum }), ...cmds, atTimeout ? expire(min(5)) : resolveByQuorum()]);
        expect(state.status).toBe('escalated');
      }),
    );
  });

  it('12 / Appendix B: every proposal and decision event the library produces validates against the JSON Schemas', () => {
    fc.assert(
      fc.property(submitArb, fc.array(commandArb, { maxLength: 20 }), (s, cmds) => {
        const states: ProposalState[] = [];
        let state: ProposalState = initialProposalState;
        const decisions: DecisionEvent[] = [];
        for (const c of [submit(s), ...cmds]) {
          try {
            const r = handleProposalCommand(state, c);
            state = r.state;
            states.push(state);
            decisions.push(...r.decisions);
          } catch (e) {
            if (!(e instanceof AcpError)) throw e;
          }
        }
        for (const st of states) expectSchemaValid(projectProposal(st), 'proposal');
        for (const d of decisions) expectSchemaValid(d, 'decision');
      }),
    );
  });

  it('Appendix B: the extension-carrying objects validate too (quorum_policy, depends_on, escalation, payload_hash, child outcomes)', () => {
    const child = ulidOf(77, 0x0194_6f8a_2000);
    const parent = run([
      submit({ depends_on: [child], payload_hash: 'sha256:00' }),
      {
        type: 'RecordChildOutcome',
        command_id: ulidOf(500),
        now: at(9),
        actor: 'resolver',
        data: { proposal_id: P1, child_proposal_id: child, outcome: 'approved' },
      },
      resolveByQuorum(),
    ]);
    const policy = run([
      submit({ quorum: 1, quorum_policy: { kind: 'weighted', threshold: 0.5 } }),
      escalate(),
      resolveEscalation('approved', { note: null }),
    ]);
    for (const r of [parent, policy]) {
      expectSchemaValid(projectProposal(r.state), 'proposal');
      r.decisions.forEach((d) => expectSchemaValid(d, 'decision'));
    }
    expect(parent.decisions).toHaveLength(1);
    expect(policy.decisions).toHaveLength(2);
  });

  it('the schema files are Appendix B as written', () => {
    const p = JSON.parse(fs.readFileSync(path.join(schemaDir, 'proposal.schema.json'), 'utf8'));
    expect(p.$id).toBe('https://acp-protocol.org/v1/proposal');
    expect(p.required).toEqual([
      'schema_version',
      'proposal_id',
      'type',
      'domain',
      'author',
      'payload',
      'status',
      'responses',
      'quorum',
      'created_at',
    ]);
    expect(validateProposal({})).toBe(false);
  });

  it('pendingResolution never offers a resolution that decide then refuses', () => {
    fc.assert(
      fc.property(fc.array(responseArb, { maxLength: 6 }), fc.integer({ min: 1, max: 6 }), (rs, quorum) => {
        const { state } = run([submit({ quorum }), ...responseCommands(rs)]);
        const due = pendingResolution(state);
        if (due) expect(decide(resolveByQuorum({ proposal_id: due.proposal_id }), state, DEFAULT_DECIDER_CONFIG).length).toBe(1);
        else expect(() => decide(resolveByQuorum(), state)).toThrow(AcpError);
      }),
    );
  });

  it('evolve is pure: applying an event never mutates the previous state', () => {
    const { events } = run([submit(), endorse('a', { domain_authority: 1, confidence: 1, trust_score: 1 })]);
    const s1 = foldProposal(events.slice(0, 1));
    const snapshot = JSON.stringify(projectProposal(s1));
    evolveProposal(s1, events[1]);
    expect(JSON.stringify(projectProposal(s1))).toBe(snapshot);
  });
});
