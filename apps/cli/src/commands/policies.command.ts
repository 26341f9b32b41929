import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  AcpError,
  DomainPolicyDocument,
  FirstDecision,
  isDomain,
  isWithinDomain,
  parseDomainPolicy,
  POLICY_PATTERNS,
  Proposal,
  replayUnderPolicy,
  ReplayVerdict,
  summarizeReplay,
} from '@conclave/acp-protocol';
import { ConclaveClient, ConclaveError } from '@conclave/sdk';
import { withSignedClient } from './participants.command';

/** A policy document from a JSON file, validated as the service will validate it. */
export function readPolicyFile(file: string): DomainPolicyDocument {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConclaveError({ code: 'INVALID_JSON', message: `${file}: ${(err as Error).message}` });
  }
  try {
    return parseDomainPolicy(json);
  } catch (err) {
    if (err instanceof AcpError) throw new ConclaveError({ ...err.toJSON(), message: `${file}: ${err.message}` });
    throw err;
  }
}

export interface ReplayReport {
  domain: string;
  since: string;
  policy: { domain: string; version: number };
  summary: ReturnType<typeof summarizeReplay>;
  examples: Array<{ proposal_id: string; domain: string; created_at: string } & ReplayVerdict>;
}

/**
 * Re-decides the proposals of `domain` created at or after `since` under `policy`, reading them
 * through the API (the reader's grants apply) and writing nothing. `progress` is told how many
 * have been examined as it goes.
 */
export async function replayDomain(
  client: ConclaveClient,
  options: { policy: DomainPolicyDocument; domain: string; since: Date; examples: number; progress?: (examined: number) => void },
): Promise<ReplayReport> {
  const verdicts: ReplayVerdict[] = [];
  const examples: ReplayReport['examples'] = [];
  const since = options.since.getTime();
  let cursor: string | undefined;
  do {
    const page: { proposals: Proposal[]; next_cursor: string | null } = await client.list({ domain: options.domain, limit: 200, cursor });
    for (const p of page.proposals) {
      if (Date.parse(p.created_at) < since) continue;
      const verdict = replayUnderPolicy(p, options.policy);
      verdicts.push(verdict);
      if ((verdict.kind === 'changed' || verdict.kind === 'refused') && examples.length < options.examples) {
        examples.push({ proposal_id: p.proposal_id, domain: p.domain, created_at: p.created_at, ...verdict });
      }
      options.progress?.(verdicts.length);
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return {
    domain: options.domain,
    since: options.since.toISOString(),
    policy: { domain: options.policy.domain, version: options.policy.version },
    summary: summarizeReplay(verdicts),
    examples,
  };
}

const decision = (d: FirstDecision) =>
  d.outcome === 'pending' ? 'pending' : `${d.outcome} (${d.trigger}) for ${d.votes_for} / against ${d.votes_against}`;

export function formatReplay(r: ReplayReport): string[] {
  const s = r.summary;
  const lines = [
    `replayed ${s.examined} proposal(s) of ${r.domain} since ${r.since} under policy ${r.policy.domain} v${r.policy.version} (nothing written)`,
    `  ${s.changed} would change, ${s.same} would not, ${s.refused} would be refused at submission, ${s.skipped} not decided by votes`,
  ];
  for (const e of r.examples) {
    if (e.kind === 'changed') lines.push(`  ${e.proposal_id} ${e.domain}: ${decision(e.before)}  ->  ${decision(e.after)}`);
    if (e.kind === 'refused') lines.push(`  ${e.proposal_id} ${e.domain}: ${decision(e.before)}  ->  refused ${e.code}: ${e.message}`);
  }
  return lines;
}

/** A progress bar on stderr, only when it is a terminal (a pipe or a log gets none). */
function progressBar(): ((n: number) => void) & { done(): void } {
  const tty = process.stderr.isTTY === true;
  let last = 0;
  const tick = (n: number) => {
    if (!tty || n - last < 50) return;
    last = n;
    process.stderr.write(`\rreplaying... ${n} proposal(s)`);
  };
  return Object.assign(tick, { done: () => tty && last > 0 && process.stderr.write('\n') });
}

/** `conclave policies set|get` and `conclave replay` (RFC 18.1/18.2; docs/conformance.md). */
export function registerPolicyCommands(program: Command): void {
  const show = (json: boolean, reply: unknown) => console.log(json ? JSON.stringify(reply) : JSON.stringify(reply, null, 2));
  const policies = program
    .command('policies')
    .description("domains' policy documents: quorum policies and weight functions (RFC 18.1/18.2)");

  policies
    .command('set <file>')
    .description('record a new version of a domain policy document (administrator); its version must be the current one + 1')
    .action((file: string) =>
      withSignedClient(program, async (client, json) => {
        const policy = readPolicyFile(file);
        const reply = await client.call<{ policy: DomainPolicyDocument }>(POLICY_PATTERNS.set, { policy });
        if (json) return show(true, reply);
        console.log(`policy of ${reply.policy.domain} is now at version ${reply.policy.version}`);
      }),
    );

  policies
    .command('get <domain>')
    .description("a domain's own document (or one --version of it) and the document that governs it")
    .option('--version <n>', 'one recorded version', (v) => Number(v))
    .action((domain: string, o: { version?: number }) =>
      withSignedClient(program, async (client, json) => {
        show(json, await client.call(POLICY_PATTERNS.get, o.version === undefined ? { domain } : { domain, version: o.version }));
      }),
    );

  program
    .command('replay')
    .description(
      'what-if: re-decide past proposals under a proposed policy document and print how many outcomes would change; writes nothing',
    )
    .requiredOption('--policy <file>', 'the proposed policy document (JSON)')
    .requiredOption('--domain <domain>', 'the proposals of this domain and the domains under it')
    .requiredOption('--since <time>', 'proposals created at or after this time (ISO 8601)')
    .option('--examples <n>', 'how many changed proposals to show', (v) => Number(v), 5)
    .action((o: { policy: string; domain: string; since: string; examples: number }) =>
      withSignedClient(program, async (client, json) => {
        const policy = readPolicyFile(o.policy);
        const since = new Date(o.since);
        if (Number.isNaN(since.getTime()))
          throw new ConclaveError({ code: 'SCHEMA_VIOLATION', message: `--since ${o.since} is not a time`, field: 'since' });
        if (!isDomain(o.domain) || !isWithinDomain(o.domain, policy.domain)) {
          throw new ConclaveError({
            code: 'SCHEMA_VIOLATION',
            message: `--domain ${o.domain} is not governed by the policy's domain ${policy.domain}`,
            field: 'domain',
          });
        }
        const bar = progressBar();
        const report = await replayDomain(client, { policy, domain: o.domain, since, examples: o.examples, progress: bar });
        bar.done();
        if (json) console.log(JSON.stringify(report));
        else formatReplay(report).forEach((line) => console.log(line));
      }),
    );
}
