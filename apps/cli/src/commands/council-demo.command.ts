import { acpStreamNames } from '@conclave/messaging';
import type { CouncilClientOptions } from '@conclave/sdk';
import { CouncilClient, CouncilDecisionMessage } from '@conclave/sdk';
import { ScriptedMember, cleanBehaviour, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import type { NatsConnection } from 'nats';

export interface CouncilDemoOptions {
  /** Council subject prefix of the deployment (default `council`). */
  prefix?: string;
  streamSuffix?: string;
  timeoutMs?: number;
  /** Signs the owner's commands where the service requires authentication (`ed25519Signer`). */
  signer?: CouncilClientOptions['signer'];
  /** The goal contract's decision owner: the participant the signer signs as. */
  owner?: string;
  /** Signs each scripted member's answers as that member where the service requires authentication. */
  memberSigner?: (memberId: string) => CouncilClientOptions['signer'];
}

/** The demo council's scripted members (registered as participants when authentication is on). */
export const COUNCIL_DEMO_MEMBERS = { proposers: ['demo-builder', 'demo-skeptic', 'demo-operator'], chair: 'demo-chair' } as const;

const DISSENT = 'skeptic: dual writes may still drift under peak load; discriminating evidence: a replay of last month of traffic';

/**
 * The small council of the demo: three scripted proposers (builder, skeptic, operator) and a
 * scripted chair answer on `<prefix>.v1.tasks.<member_id>`; the council service runs the
 * deliberation (independent candidates, blind review, one targeted revision, the chair's
 * decision); the DecisionRecord is read from the COUNCIL_DECISIONS stream and printed with its
 * dissent.
 */
export async function runCouncilDemo(
  nc: NatsConnection,
  print: (line: string) => void,
  options: CouncilDemoOptions = {},
): Promise<CouncilDecisionMessage> {
  const prefix = options.prefix ?? 'council';
  const proposers = [...COUNCIL_DEMO_MEMBERS.proposers];
  const chair = COUNCIL_DEMO_MEMBERS.chair;
  const members = [
    ...proposers.map((id) => new ScriptedMember(nc, id, cleanBehaviour(), prefix, options.memberSigner?.(id))),
    new ScriptedMember(
      nc,
      chair,
      cleanBehaviour({ decision: () => ({ unresolved_dissent: [DISSENT] }) }),
      prefix,
      options.memberSigner?.(chair),
    ),
  ].map((m) => m.start());
  const stream = acpStreamNames(options.streamSuffix ?? '').councilDecisions;
  const consumer = await nc.jetstream().consumers.get(stream, { opt_start_time: new Date(Date.now() - 1_000).toISOString() });
  const messages = await consumer.consume();
  const timeoutMs = options.timeoutMs ?? 30_000;
  const timer = setTimeout(() => void messages.close(), timeoutMs);
  try {
    const goal = scriptedGoalContract({ goal_contract_id: 'gc-demo', ...(options.owner ? { decision_owner: options.owner } : {}) });
    const runId = await new CouncilClient(nc, prefix, { signer: options.signer }).start({
      goal_contract: goal,
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 10_000 },
    });
    print(`council run ${runId}: "${goal.question}" with ${proposers.join(', ')} and chair ${chair}`);
    for await (const m of messages) {
      const d = m.json<CouncilDecisionMessage>();
      if (d.run_id !== runId) continue;
      formatCouncilDecision(d).forEach((line) => print(line));
      return d;
    }
    throw new Error(`council demo: no decision within ${timeoutMs} ms`);
  } finally {
    clearTimeout(timer);
    await messages.close().catch(() => undefined);
    await Promise.all(members.map((m) => m.stop()));
  }
}

/** A DecisionRecord for people: decision, grounding, dissent, actions, reversal and stop-loss. */
export function formatCouncilDecision(d: CouncilDecisionMessage): string[] {
  const lines = [
    `COUNCIL ${d.terminal_state.toUpperCase()} (${d.reason})  [run ${d.run_id}, best checkpoint ${d.best_checkpoint_id ?? 'none'}]`,
  ];
  const r = d.decision_record as {
    decision: string;
    selected_path: string;
    chair_mode?: string;
    confidence: string;
    grounded_in: string[];
    unresolved_dissent: (string | { description: string })[];
    actions: string[];
    reversal_signals: string[];
    stop_loss_conditions: string[];
    member_failures?: { member_id: string; stage: string; reason: string }[];
  } | null;
  if (!r) return [...lines, `  no decision record${d.note ? `: ${d.note}` : ''}`];
  lines.push(`  decision:    ${r.decision}`);
  lines.push(
    `  selected:    ${r.selected_path}${r.chair_mode ? ` (${r.chair_mode})` : ''}, confidence ${r.confidence}, grounded in ${r.grounded_in.join(', ')}`,
  );
  for (const x of r.unresolved_dissent) lines.push(`  dissent:     ${typeof x === 'string' ? x : x.description}`);
  if (r.unresolved_dissent.length === 0) lines.push('  dissent:     none');
  for (const a of r.actions) lines.push(`  action:      ${a}`);
  for (const s of r.reversal_signals) lines.push(`  reverse if:  ${s}`);
  for (const s of r.stop_loss_conditions) lines.push(`  stop-loss:   ${s}`);
  for (const f of r.member_failures ?? []) lines.push(`  failed:      ${f.member_id} (${f.stage}, ${f.reason})`);
  return lines;
}
