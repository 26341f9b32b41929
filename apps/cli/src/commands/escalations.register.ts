import type { Command } from 'commander';
import type { ConclaveClient, EscalationQuery } from '@conclave/sdk';
import { listEscalations, showEscalation } from './escalations.command';
import { UsageError, resolveEscalation, waitForOutcome } from './resolve.command';

type WithClient = <T>(fn: (client: ConclaveClient, json: boolean) => Promise<T>) => Promise<T>;

const print = (line: string) => console.log(line);

/** Runs a command that returns an exit code; a usage error exits 64 with its message. */
async function exitWith(run: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await run();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`usage: ${err.message}`);
    process.exitCode = err.exitCode;
  }
}

/** Header a human resolver token travels in (CONCLAVE_HUMAN_TOKENS on the escalation service). */
export function humanTokenHeaders(token: string | undefined): (() => Record<string, string>) | undefined {
  return token ? () => ({ Authorization: `Bearer ${token}` }) : undefined;
}

/** `conclave escalations list|show`, `conclave resolve`, `conclave wait`. */
export function registerEscalationCommands(program: Command, withClient: WithClient): void {
  const escalations = program.command('escalations').description('the human escalation inbox (RFC 10)');
  escalations
    .command('list', { isDefault: true })
    .description('escalations waiting for a human (oldest first)')
    .option('--status <status>', 'open (default), resolved, expired or all')
    .option('--domain <domain>', 'a domain and its subdomains')
    .option('--assignee <name>', 'only those assigned to this human or team')
    .action((o: EscalationQuery) => withClient((client, json) => exitWith(() => listEscalations(client, o, json, print))));
  escalations
    .command('show <proposal_id>')
    .description('one escalation: payload, responses with weights and reasons, vote totals')
    .action((id: string) => withClient((client, json) => exitWith(() => showEscalation(client, id, json, print))));

  program
    .command('resolve <proposal_id>')
    .description('resolve an escalated proposal as a human; exit code by outcome (0 approved, 10 rejected, 11 still escalated)')
    .option('--approve', 'approve it')
    .option('--reject', 'reject it')
    .requiredOption('--note <text>', 'why (recorded with the decision)')
    .option('--as <human>', 'your id (when no --token names you)')
    .action((id: string, o: { approve?: boolean; reject?: boolean; note: string; as?: string }) =>
      withClient((client, json) => exitWith(() => resolveEscalation(client, id, o, json, print))),
    );

  program
    .command('wait <proposal_id>')
    .description('wait for the decision and exit by outcome: 0 approved, 10 rejected, 11 escalated, 12 expired, 13 pending at timeout')
    .option('--final', 'wait through an escalation for the human outcome')
    .option('--timeout <ms>', 'give up after this long (exit 13, or 11 if escalated)', (v) => Number(v))
    .action((id: string, o: { final?: boolean; timeout?: number }) =>
      withClient((client, json) => exitWith(() => waitForOutcome(client, id, { final: o.final, timeoutMs: o.timeout }, json, print))),
    );
}
