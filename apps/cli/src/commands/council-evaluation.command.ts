import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { COUNCIL_COMMANDS } from '@conclave/messaging';
import { connect, headers } from 'nats';
import { natsLogin } from '../nats-connection';
import { commandSigner, SigningOptions } from './participants.command';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

type Reply = { ok: true } & Record<string, unknown>;

interface Estimate {
  model_family: string;
  model_version: string;
  role: string;
  domain: string;
  tools: string;
  estimate: number;
  uncertainty: number;
  lower: number;
  upper: number;
  observations: number;
  evidence: Record<'outcome' | 'peer-preference', { count: number; weight: number }>;
  superseded_by: string | null;
}

interface Calibration {
  member_id: string;
  role: string;
  domain: string;
  count: number;
  brier: number;
  log_loss: number;
  reliability: { confidence: string; probability: number; count: number; observed_frequency: number }[];
}

interface ConcentrationCell {
  domain: string;
  period: string;
  run_ids: string[];
  dimensions: Record<string, { normalized_hhi: number | null; total: number; shares: { who: string; share: number }[] }>;
  findings: string[];
}

const n3 = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(3));

/** One request on `<council prefix>.<pattern>`, signed when a participant and key are given. */
async function request(program: Command, council: Command, pattern: string, body: unknown): Promise<Reply> {
  const opts = program.opts<SigningOptions>();
  const nc = await connect(natsLogin(opts, process.env));
  try {
    const subject = `${council.opts<{ councilPrefix: string }>().councilPrefix}.${pattern}`;
    const bytes = encoder.encode(JSON.stringify(body));
    const signer = commandSigner(opts);
    const extra = signer ? await signer(subject, bytes) : undefined;
    const h = extra ? headers() : undefined;
    if (h && extra) for (const [k, v] of Object.entries(extra)) h.set(k, v);
    const msg = await nc.request(subject, bytes, { timeout: 15_000, headers: h });
    const reply = JSON.parse(decoder.decode(msg.data)) as Reply | { ok: false; error: { code: string; message: string; field?: string } };
    if (!reply.ok) throw new Error(`${reply.error.code}${reply.error.field ? ` at ${reply.error.field}` : ''}: ${reply.error.message}`);
    return reply;
  } finally {
    await nc.drain();
  }
}

/**
 * `conclave council estimates | calibration | concentration | outcome`: the council:L4 and L5
 * read models of the evaluation reactor (capability estimates per model family × version × role
 * × domain × tools, Brier score and log loss per member × role × domain, the concentration audit
 * per domain and period), and recording a structured outcome. With authentication on, the read
 * models show only the domains the signer holds a grant on.
 */
export function registerCouncilEvaluationCommands(program: Command, council: Command): void {
  const json = () => program.opts<{ json: boolean }>().json;

  council
    .command('estimates')
    .description('capability estimates (council:L4): estimate, uncertainty and count per model family × version × role × domain × tools')
    .option(
      '--domain <domain>',
      'only this domain (authentication on: one you hold a grant on; without --domain, the domains you may read)',
    )
    .option(
      '--rebuild',
      'fold the whole log again (no snapshot) and show that: a check that a rebuild gives the same numbers (administrators only, with authentication on)',
      false,
    )
    .action(async (o: { domain?: string; rebuild: boolean }) => {
      const reply = await request(program, council, COUNCIL_COMMANDS.estimates, {
        ...(o.domain ? { domain: o.domain } : {}),
        rebuild: o.rebuild,
      });
      if (json()) return console.log(JSON.stringify(reply));
      const estimates = reply['estimates'] as Estimate[];
      console.log(
        `${estimates.length} estimate(s) over ${String(reply['ended_runs'])} ended run(s)${o.rebuild ? ', rebuilt from the log' : ''}`,
      );
      for (const e of estimates)
        console.log(
          `  ${e.domain}  ${e.role.padEnd(11)} ${e.model_family}@${e.model_version}${e.tools ? ` [${e.tools}]` : ''}  ` +
            `estimate ${n3(e.estimate)} ± ${n3(e.uncertainty)} (90% ${n3(e.lower)}-${n3(e.upper)})  n=${e.observations} ` +
            `(outcomes ${e.evidence.outcome.count}, peer ${e.evidence['peer-preference'].count})${e.superseded_by ? `  superseded by ${e.superseded_by}` : ''}`,
        );
    });

  council
    .command('calibration')
    .description('calibration (council:L5): Brier score, log loss and reliability per member × role × domain')
    .option(
      '--domain <domain>',
      'only this domain (authentication on: one you hold a grant on; without --domain, the domains you may read)',
    )
    .action(async (o: { domain?: string }) => {
      const reply = await request(program, council, COUNCIL_COMMANDS.calibration, o.domain ? { domain: o.domain } : {});
      if (json()) return console.log(JSON.stringify(reply));
      const rows = reply['calibration'] as Calibration[];
      console.log(`${String(reply['forecasts'])} scored forecast(s)`);
      for (const r of rows)
        console.log(
          `  ${r.domain}  ${r.role.padEnd(11)} ${r.member_id}  n=${r.count}  Brier ${n3(r.brier)}  log loss ${n3(r.log_loss)}  ` +
            r.reliability.map((b) => `${b.confidence} ${n3(b.probability)}→${n3(b.observed_frequency)} (${b.count})`).join(', '),
        );
    });

  council
    .command('concentration')
    .description('concentration audit (spec 16.7): who proposes, is selected, chairs, whose dissent survives, per domain and period')
    .option(
      '--domain <domain>',
      'only this domain (authentication on: one you hold a grant on; without --domain, the domains you may read)',
    )
    .option('--period <period>', 'day | week | month | quarter | year | all', 'month')
    .option('--subject <subject>', 'member | model_family', 'member')
    .action(async (o: { domain?: string; period: string; subject: string }) => {
      const reply = await request(program, council, COUNCIL_COMMANDS.concentration, {
        ...(o.domain ? { domain: o.domain } : {}),
        period: o.period,
        subject: o.subject,
      });
      if (json()) return console.log(JSON.stringify(reply));
      const audit = reply['audit'] as { cells: ConcentrationCell[]; skipped: unknown[] };
      console.log(`${audit.cells.length} cell(s); ${audit.skipped.length} run(s) not decided, not counted`);
      for (const cell of audit.cells) {
        console.log(`  ${cell.domain} ${cell.period}: ${cell.run_ids.length} decided run(s)`);
        for (const [dim, m] of Object.entries(cell.dimensions)) {
          const top = m.shares[0];
          console.log(
            `    ${dim.padEnd(16)} HHI ${n3(m.normalized_hhi)}  ${top ? `top ${top.who} ${(top.share * 100).toFixed(0)}%` : '-'}`,
          );
        }
        for (const f of cell.findings) console.log(`    FINDING ${f}`);
      }
    });

  council
    .command('outcome <run_id> <outcome_json>')
    .description('record a structured outcome (council:L5) of a run’s decision, as its decision owner or an evaluator')
    .option('--actor <participant_id>', 'who records (with authentication off)')
    .action(async (runId: string, file: string, o: { actor?: string }) => {
      const outcome = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      const reply = await request(program, council, COUNCIL_COMMANDS.recordOutcome, {
        run_id: runId,
        outcome,
        ...(o.actor ? { actor: o.actor } : {}),
      });
      console.log(json() ? JSON.stringify(reply) : `outcome ${String(reply['outcome_id'])} recorded on run ${runId}`);
    });
}
