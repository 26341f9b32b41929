import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { validateRunRecord } from '@conclave/council-protocol';
import { CouncilClient } from '@conclave/sdk';
import { connect } from 'nats';
import { natsLogin } from '../nats-connection';
import { registerCouncilEvaluationCommands } from './council-evaluation.command';
import { commandSigner, SigningOptions } from './participants.command';

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/**
 * `conclave council ...`: `validate <run.json>` checks a RunRecord offline (spec 19.1, checklist
 * 16: a single agent can run council:L0 without the service); `start <request.json>` and
 * `get <run_id>` talk to the council service.
 */
export function registerCouncilCommands(program: Command): void {
  const council = program
    .command('council')
    .description('Council runs: validate a RunRecord offline, start a run, read a RunRecord')
    .option('--council-prefix <prefix>', 'Council subject prefix', process.env['CONCLAVE_COUNCIL_PREFIX'] ?? 'council');

  const withCouncil = async (fn: (client: CouncilClient, json: boolean) => Promise<void>) => {
    const opts = program.opts<SigningOptions>();
    const nc = await connect(natsLogin(opts, process.env));
    try {
      const signer = commandSigner(opts);
      await fn(new CouncilClient(nc, council.opts<{ councilPrefix: string }>().councilPrefix, { signer }), opts.json);
    } finally {
      await nc.drain();
    }
  };

  council
    .command('validate <run_json>')
    .description('check a RunRecord (spec 8.7) offline, without a Council service; exit 0 valid, 3 invalid')
    .action((file: string) => {
      const report = validateRunRecord(readJson(file));
      if (program.opts<{ json: boolean }>().json) console.log(JSON.stringify(report));
      else {
        const c = report.counts;
        console.log(
          `${report.valid ? 'VALID' : 'INVALID'} RunRecord ${file}: level ${report.level ?? '?'}, terminal ${report.terminal_state ?? '?'}`,
        );
        console.log(
          `  ${c.candidates} candidates, ${c.revisions} revisions, ${c.reviews} reviews, ${c.conflict_maps} conflict maps, ${c.frame_checks} frame checks`,
        );
        for (const p of report.problems) console.log(`  ${p.code} at ${p.path || '(root)'}: ${p.message}`);
      }
      process.exitCode = report.valid ? 0 : 3;
    });

  council
    .command('start <request_json>')
    .description('start a run from a file holding {goal_contract, panel, policy?}; prints the run id')
    .action((file: string) =>
      withCouncil(async (client, json) => {
        const runId = await client.start(readJson(file) as Parameters<CouncilClient['start']>[0]);
        console.log(json ? JSON.stringify({ run_id: runId }) : runId);
      }),
    );

  council
    .command('get <run_id>')
    .description('print the RunRecord of a run (the anonymisation mapping only for the decision owner, once the run has ended)')
    .option('--actor <participant_id>', 'who reads (with authentication off; the decision owner sees the mapping after the run)')
    .action((runId: string, opts: { actor?: string }) =>
      withCouncil(async (client, json) => {
        const record = await client.get(runId, opts.actor);
        console.log(json ? JSON.stringify(record) : JSON.stringify(record, null, 2));
      }),
    );

  registerCouncilEvaluationCommands(council, withCouncil);
}
