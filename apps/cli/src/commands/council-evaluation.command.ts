import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { ConcentrationPeriod, ConcentrationSubject } from '@conclave/council-protocol';
import type { CouncilClient } from '@conclave/sdk';

const n3 = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(3));

/** Runs `fn` with a CouncilClient logged in and signing as the options say. */
export type WithCouncil = (fn: (client: CouncilClient, json: boolean) => Promise<void>) => Promise<void>;

/**
 * `conclave council estimates | calibration | concentration | outcome`: the council:L4 and L5
 * read models of the evaluation reactor (capability estimates per model family × version × role
 * × domain × tools, Brier score and log loss per member × role × domain, the concentration audit
 * per domain and period), and recording a structured outcome. With authentication on, the read
 * models show only the domains the signer holds a grant on. A RATE_LIMITED refusal is resent
 * after its hint, as every SDK call is.
 */
export function registerCouncilEvaluationCommands(council: Command, withCouncil: WithCouncil): void {
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
    .action((o: { domain?: string; rebuild: boolean }) =>
      withCouncil(async (client, json) => {
        const reply = await client.estimates({ ...(o.domain ? { domain: o.domain } : {}), rebuild: o.rebuild });
        if (json) return console.log(JSON.stringify({ ok: true, ...reply }));
        const { estimates } = reply;
        console.log(`${estimates.length} estimate(s) over ${reply.ended_runs} ended run(s)${o.rebuild ? ', rebuilt from the log' : ''}`);
        for (const e of estimates)
          console.log(
            `  ${e.domain}  ${e.role.padEnd(11)} ${e.model_family}@${e.model_version}${e.tools ? ` [${e.tools}]` : ''}  ` +
              `estimate ${n3(e.estimate)} ± ${n3(e.uncertainty)} (90% ${n3(e.lower)}-${n3(e.upper)})  n=${e.observations} ` +
              `(outcomes ${e.evidence.outcome.count}, peer ${e.evidence['peer-preference'].count})${e.superseded_by ? `  superseded by ${e.superseded_by}` : ''}`,
          );
      }),
    );

  council
    .command('calibration')
    .description('calibration (council:L5): Brier score, log loss and reliability per member × role × domain')
    .option(
      '--domain <domain>',
      'only this domain (authentication on: one you hold a grant on; without --domain, the domains you may read)',
    )
    .action((o: { domain?: string }) =>
      withCouncil(async (client, json) => {
        const reply = await client.calibration(o.domain ? { domain: o.domain } : {});
        if (json) return console.log(JSON.stringify({ ok: true, ...reply }));
        console.log(`${reply.forecasts} scored forecast(s)`);
        for (const r of reply.calibration)
          console.log(
            `  ${r.domain}  ${r.role.padEnd(11)} ${r.member_id}  n=${r.count}  Brier ${n3(r.brier)}  log loss ${n3(r.log_loss)}  ` +
              r.reliability.map((b) => `${b.confidence} ${n3(b.probability)}→${n3(b.observed_frequency)} (${b.count})`).join(', '),
          );
      }),
    );

  council
    .command('concentration')
    .description('concentration audit (spec 16.7): who proposes, is selected, chairs, whose dissent survives, per domain and period')
    .option(
      '--domain <domain>',
      'only this domain (authentication on: one you hold a grant on; without --domain, the domains you may read)',
    )
    .option('--period <period>', 'day | week | month | quarter | year | all', 'month')
    .option('--subject <subject>', 'member | model_family', 'member')
    .action((o: { domain?: string; period: string; subject: string }) =>
      withCouncil(async (client, json) => {
        // Period and subject are checked by the service, which names the field it refuses.
        const reply = await client.concentration({
          ...(o.domain ? { domain: o.domain } : {}),
          period: o.period as ConcentrationPeriod,
          subject: o.subject as ConcentrationSubject,
        });
        if (json) return console.log(JSON.stringify({ ok: true, ...reply }));
        const { audit } = reply;
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
      }),
    );

  council
    .command('outcome <run_id> <outcome_json>')
    .description('record a structured outcome (council:L5) of a run’s decision, as its decision owner or an evaluator')
    .option('--actor <participant_id>', 'who records (with authentication off)')
    .action((runId: string, file: string, o: { actor?: string }) =>
      withCouncil(async (client, json) => {
        const outcome = JSON.parse(readFileSync(file, 'utf8')) as unknown;
        const reply = await client.recordOutcome({ run_id: runId, outcome, ...(o.actor ? { actor: o.actor } : {}) });
        console.log(json ? JSON.stringify({ ok: true, ...reply }) : `outcome ${reply.outcome_id} recorded on run ${runId}`);
      }),
    );
}
