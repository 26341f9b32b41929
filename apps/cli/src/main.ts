#!/usr/bin/env node
import { Command } from 'commander';
import { ConclaveClient, ConclaveError, CouncilRequestError, FeedError } from '@conclave/sdk';
import { runCouncilDemo, runDemo } from './commands/demo.command';
import { runSecureDemo, setupSecureDemo } from './commands/secure-demo.command';
import { registerCouncilCommands } from './commands/council.command';
import { formatDecision, OUTCOME_EXIT_CODES } from './format';
import { commandSigner, registerParticipantCommands, SigningOptions } from './commands/participants.command';
import { registerAuditCommands } from './commands/audit.command';
import { registerPolicyCommands } from './commands/policies.command';
import { humanTokenHeaders, registerEscalationCommands } from './commands/escalations.register';
import { addNatsLoginOptions, natsJsApiPrefix, natsLogin, NatsLoginError, NatsLoginOptions } from './nats-connection';
import { FeedUsageError, registerFeedCommands } from './commands/feeds.command';

// The CLI is an edge: it may read the environment for defaults (flags win).
const program = new Command()
  .name('conclave')
  .description('Conclave: decisions for fleets of AI agents (ACP + Council) over NATS')
  .option('--nats <url>', 'NATS server URL', process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222')
  .option('--prefix <prefix>', 'ACP subject prefix', process.env['CONCLAVE_SUBJECT_PREFIX'] ?? 'acp')
  .option('--stream-suffix <suffix>', 'suffix of the JetStream stream names', process.env['CONCLAVE_STREAM_SUFFIX'] ?? '')
  .option('--json', 'machine-readable output (one JSON object per line)', false)
  .option('--token <token>', 'human resolver token (escalation service)', process.env['CONCLAVE_HUMAN_TOKEN']);
addNatsLoginOptions(program, process.env);

/** A client logged in to NATS as the options say, signing as --participant (or sending --token). */
async function withClient<T>(fn: (client: ConclaveClient, json: boolean) => Promise<T>): Promise<T> {
  const opts = program.opts<NatsLoginOptions & SigningOptions & { token?: string }>();
  const client = await ConclaveClient.connect({
    ...natsLogin(opts, process.env),
    jsApiPrefix: natsJsApiPrefix(opts),
    prefix: opts.prefix,
    streamSuffix: opts.streamSuffix,
    sign: humanTokenHeaders(opts.token),
    signer: commandSigner(opts),
  });
  try {
    return await fn(client, opts.json);
  } finally {
    await client.close();
  }
}

program
  .command('demo')
  .description('post the RFC Appendix C scenarios and print each decision as it arrives')
  .option(
    '--keys-dir <dir>',
    'authentication on: register the demo participants with fresh keys written here, signed as --participant (an administrator), then sign as each of them and show two attacks refused',
  )
  .option('--supersede <prefix>', 'with --keys-dir: deactivate the administrators of earlier runs, whose ids start with this')
  .action((o: { keysDir?: string; supersede?: string }) =>
    withClient(async (client, json) => {
      const print = (line: string) => !json && console.log(line);
      const { streamSuffix, prefix, participant } = program.opts<{ streamSuffix: string; prefix: string; participant?: string }>();
      const councilPrefix = process.env['CONCLAVE_COUNCIL_PREFIX'];
      if (o.keysDir) {
        if (!participant) throw new Error('demo --keys-dir signs the registrations: give --participant and --key-file of an administrator');
        const keys = await setupSecureDemo(client, participant, { keysDir: o.keysDir, supersedePrefix: o.supersede, print });
        const result = await runSecureDemo(client.nc, keys, print, { prefix, streamSuffix, councilPrefix });
        if (json) [...result.decisions, result.council, ...result.refusals].forEach((d) => console.log(JSON.stringify(d)));
        return;
      }
      const decisions = await runDemo(client, print);
      if (json) decisions.forEach((d) => console.log(JSON.stringify(d)));
      const council = await runCouncilDemo(client.nc, print, { prefix: councilPrefix, streamSuffix });
      if (json) console.log(JSON.stringify(council));
    }),
  );

program
  .command('get <proposal_id>')
  .description('show a proposal; the exit code tells its outcome (0 approved, 10 rejected, 11 escalated, 12 expired, 13 pending)')
  .action((id: string) =>
    withClient(async (client, json) => {
      const proposal = await client.get(id);
      console.log(json ? JSON.stringify(proposal) : JSON.stringify(proposal, null, 2));
      const key = (proposal.resolution?.outcome ??
        (proposal.status === 'pending' ? 'pending' : proposal.status)) as keyof typeof OUTCOME_EXIT_CODES;
      process.exitCode = OUTCOME_EXIT_CODES[key] ?? 1;
    }),
  );

program
  .command('list')
  .description('list proposals')
  .option('--domain <domain>')
  .option('--status <status>')
  .option('--limit <n>', 'page size', (v) => Number(v))
  .action((o: { domain?: string; status?: 'pending'; limit?: number }) =>
    withClient(async (client, json) => {
      const page = await client.list(o);
      if (json) return console.log(JSON.stringify(page));
      for (const p of page.proposals) console.log(`${p.proposal_id}  ${p.status.padEnd(9)}  ${p.domain}  ${p.author}`);
      if (page.next_cursor) console.log(`(more: --cursor ${page.next_cursor})`);
    }),
  );

program
  .command('watch [domain]')
  .description('stream decisions as they are made (domain exact, or a subtree like risk.>)')
  .option('--durable <name>', 'resume where this named reader left off')
  .option(
    '--bind',
    'bind to the --durable feed an operator provisioned (conclave feeds provision); create nothing. A client user of deploy/nats/nats-accounts.conf also gives --js-api-prefix',
    false,
  )
  .action((domain: string | undefined, o: { durable?: string; bind: boolean }) =>
    withClient(async (client, json) => {
      for await (const d of client.decisions({ domain, durable: o.durable, bind: o.bind, from: o.durable ? 'all' : 'new' })) {
        console.log(json ? JSON.stringify(d) : formatDecision(d));
      }
    }),
  );

registerCouncilCommands(program);

registerEscalationCommands(program, withClient);

registerParticipantCommands(program);
registerAuditCommands(program);
registerPolicyCommands(program);
registerFeedCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof NatsLoginError || err instanceof FeedUsageError) {
    console.error(`usage: ${err.message}`);
    process.exitCode = err.exitCode;
  } else if (err instanceof FeedError) {
    console.error(`error ${err.message}`);
    process.exitCode = 2;
  } else if (err instanceof ConclaveError) {
    console.error(`error ${err.code}${err.field ? ` (${err.field})` : ''}: ${err.message}`);
    process.exitCode = 2;
  } else if (err instanceof CouncilRequestError) {
    console.error(`error ${err.message}`);
    process.exitCode = 2;
  } else {
    console.error((err as Error).message ?? err);
    process.exitCode = 1;
  }
});
