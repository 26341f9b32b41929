/**
 * Micro-benchmark of the pure ACP decider (@conclave/acp-protocol): cost per response and per
 * resolution for proposals of 3 and of 1,000 responses, and heap used. Prints figures only;
 * never fails on time.  Run: npm run bench:core
 */
import {
  ProposalCommand,
  ProposalState,
  decide,
  deriveEventId,
  evolveProposal,
  foldProposal,
  initialProposalState,
  toDecisionEvent,
  ProposalEvent,
} from '@conclave/acp-protocol';

const PROPOSAL_ID = '01JHQRM8000000000004000000';
const NOW = '2025-01-15T10:00:00Z';
const BASE_COMMAND = '01JHQRMB000000000000000000';
let seq = 0;
// Spaced command ids so derived event ids never collide (see deriveEventId).
const commandId = () => deriveEventId(BASE_COMMAND, ++seq * 1024);

function meta(actor: string) {
  return { command_id: commandId(), now: NOW, actor };
}

function respond(i: number): ProposalCommand {
  return {
    type: 'RecordResponse',
    ...meta(`agent-${i}`),
    data: {
      proposal_id: PROPOSAL_ID,
      participant_id: `agent-${i}`,
      response_type: i % 3 === 0 ? 'challenge' : 'endorse',
      confidence: 0.5 + ((i * 7) % 50) / 100,
      domain_authority: 0.4 + ((i * 13) % 60) / 100,
      trust_score: 0.3 + ((i * 17) % 70) / 100,
      reason: null,
    },
  };
}

/** A pending proposal with `responses` responses and quorum `quorum`, plus its events. */
function build(responses: number, quorum: number): { state: ProposalState; events: ProposalEvent[] } {
  const events: ProposalEvent[] = [];
  let state: ProposalState = initialProposalState;
  const apply = (c: ProposalCommand) => {
    for (const e of decide(c, state)) {
      events.push(e);
      state = evolveProposal(state, e);
    }
  };
  apply({
    type: 'SubmitProposal',
    ...meta('agent-author'),
    data: {
      proposal_id: PROPOSAL_ID,
      type: 'proposal',
      domain: 'risk.credit',
      author: 'agent-author',
      payload: { action: 'approve_loan', loan_id: 'LOAN-42', amount_usd: 250000 },
      quorum,
      created_at: NOW,
      expires_at: null,
    },
  });
  for (let i = 0; i < responses; i++) apply(respond(i));
  return { state, events };
}

interface Stats {
  mean: number;
  p50: number;
  p99: number;
}

function measure(iterations: number, op: () => void): Stats {
  for (let i = 0; i < Math.min(1000, iterations); i++) op(); // warm-up
  const samples = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    op();
    samples[i] = Number(process.hrtime.bigint() - t0);
  }
  samples.sort();
  const mean = samples.reduce((a, b) => a + b, 0) / iterations;
  return { mean, p50: samples[Math.floor(iterations * 0.5)], p99: samples[Math.floor(iterations * 0.99)] };
}

const fmt = (ns: number) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(1)} µs` : `${ns.toFixed(0)} ns`);
const row = (label: string, s: Stats) =>
  console.log(`${label.padEnd(48)} mean ${fmt(s.mean).padStart(9)}   p50 ${fmt(s.p50).padStart(9)}   p99 ${fmt(s.p99).padStart(9)}`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function main(): void {
  console.log(`ACP core decider benchmark (node ${process.version}, ${process.arch})`);
  const heapBefore = process.memoryUsage().heapUsed;

  for (const n of [3, 1000]) {
    const iterations = n === 3 ? 50_000 : 5_000;

    // per response: RecordResponse decided and folded into a proposal holding n - 1 responses
    const before = build(n - 1, n).state;
    const last = respond(n - 1);
    row(
      `response #${n} (decide + evolve), ${n} responses`,
      measure(iterations, () => {
        const [e] = decide(last, before);
        evolveProposal(before, e);
      }),
    );

    // per resolution: ResolveProposal on a proposal whose quorum (n) is met, plus its decision event
    const full = build(n, n).state;
    const resolve: ProposalCommand = { type: 'ResolveProposal', ...meta('resolver'), data: { proposal_id: PROPOSAL_ID } };
    row(
      `resolution (decide + evolve + decision event), ${n}`,
      measure(iterations, () => {
        const [e] = decide(resolve, full);
        toDecisionEvent(e, evolveProposal(full, e));
      }),
    );

    // replay: fold the whole stream from nothing
    const { events } = build(n, n + 1);
    row(
      `replay: fold ${events.length} events`,
      measure(n === 3 ? 50_000 : 200, () => {
        foldProposal(events);
      }),
    );
  }

  const states = Array.from({ length: 10 }, () => build(1000, 1001).state);
  const heapAfter = process.memoryUsage().heapUsed;
  console.log(
    `heap used: ${mb(heapAfter)} (started at ${mb(heapBefore)}; ${states.length} proposals of 1,000 responses held, ~${mb((heapAfter - heapBefore) / states.length)} each, incl. garbage not yet collected)`,
  );
}

main();
