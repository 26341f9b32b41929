import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { AUDIT_PATTERNS, AuditEntry, verifyChain, VerifyResult } from '@conclave/registry-protocol';
import { withSignedClient } from './participants.command';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Verifies a JSONL export of the audit chain (one entry per line, from the genesis). An empty
 * file proves nothing and is refused; so is a line with a key twice: JSON.parse keeps the last
 * value, which the hash covers, while a person or another tool may read the first.
 */
export function verifyAuditJsonl(text: string, expectedHead?: string): VerifyResult {
  const lines = text.split('\n').filter((l) => l.trim().length > 0);
  if (lines.length === 0) {
    return {
      ok: false,
      index: 0,
      seq: null,
      problem: 'malformed',
      message: 'the file holds no entries: an export holds at least one (empty or truncated file?)',
    };
  }
  const entries: unknown[] = [];
  for (const [i, line] of lines.entries()) {
    try {
      entries.push(JSON.parse(line));
    } catch {
      return { ok: false, index: i, seq: null, problem: 'malformed', message: `line ${i + 1} is not JSON` };
    }
    const duplicate = duplicateKey(line);
    if (duplicate !== undefined) {
      return {
        ok: false,
        index: i,
        seq: null,
        problem: 'malformed',
        message: `line ${i + 1} has the key "${duplicate}" twice in one object`,
      };
    }
  }
  return verifyChain(entries, sha256, expectedHead ? { expectedHead } : {});
}

/** The first key that appears twice in one object of a valid JSON text, if any. */
export function duplicateKey(json: string): string | undefined {
  const objects: Array<{ keys: Set<string>; expectKey: boolean } | null> = [];
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let end = i + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const top = objects[objects.length - 1];
      if (top?.expectKey) {
        // Decoded, so that "a" and "\u0061" are the same key.
        const key = JSON.parse(json.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
      i = end;
    } else if (c === '{') objects.push({ keys: new Set(), expectKey: true });
    else if (c === '[') objects.push(null);
    else if (c === '}' || c === ']') objects.pop();
    else if (c === ',') {
      const top = objects[objects.length - 1];
      if (top) top.expectKey = true;
    }
  }
  return undefined;
}

export function describeVerification(r: VerifyResult): string {
  if (r.ok) return `OK: ${r.entries} entries, chain intact, head ${r.head}`;
  const where =
    r.problem === 'head-mismatch' ? 'at the end of the file' : `at line ${r.index + 1}${r.seq !== null ? ` (seq ${r.seq})` : ''}`;
  return `BROKEN ${where}: ${r.problem}: ${r.message}`;
}

/** `conclave audit verify|export|query|head`. */
export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('the tamper-evident audit log (RFC 14.6)');

  audit
    .command('verify <file>')
    .description(
      'check a JSONL export: reports the first entry where a modification, deletion, insertion or reordering breaks the chain, an empty file or a line with a key twice (exit 0 intact, 3 broken)',
    )
    .option('--head <hash>', 'the head hash obtained independently (conclave audit head): also detects a cut tail')
    .action((file: string, o: { head?: string }) => {
      const result = verifyAuditJsonl(readFileSync(file, 'utf8'), o.head);
      const json = program.opts<{ json: boolean }>().json;
      console.log(json ? JSON.stringify(result) : describeVerification(result));
      process.exitCode = result.ok ? 0 : 3;
    });

  audit
    .command('export')
    .description('write the whole chain as JSON Lines (administrator)')
    .option('--out <file>', 'file to write; stdout when absent')
    .action((o: { out?: string }) =>
      withSignedClient(program, async (client) => {
        const lines: string[] = [];
        let after: number | null = 0;
        while (after !== null) {
          const page: { entries: AuditEntry[]; next_after_seq: number | null } = await client.call(AUDIT_PATTERNS.query, {
            after_seq: after,
            limit: 1000,
          });
          lines.push(...page.entries.map((e) => JSON.stringify(e)));
          after = page.next_after_seq;
        }
        const text = lines.join('\n') + (lines.length ? '\n' : '');
        if (o.out) writeFileSync(o.out, text);
        else process.stdout.write(text);
      }),
    );

  audit
    .command('query')
    .description('entries by proposal, actor, action or outcome (administrator)')
    .option('--proposal <id>')
    .option('--actor <id>')
    .option('--action <action>', 'an event type, or rejected:<command>')
    .option('--outcome <outcome>', 'recorded or rejected')
    .option('--limit <n>', 'page size', Number)
    .action((o: { proposal?: string; actor?: string; action?: string; outcome?: string; limit?: number }) =>
      withSignedClient(program, async (client, json) => {
        const page = await client.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, {
          proposal_id: o.proposal,
          actor: o.actor,
          action: o.action,
          outcome: o.outcome,
          limit: o.limit,
        });
        for (const e of page.entries) {
          console.log(
            json
              ? JSON.stringify(e)
              : `${String(e.seq).padStart(6)}  ${e.timestamp}  ${e.actor.padEnd(20)} ${e.action.padEnd(24)} ${e.proposal_id ?? '-'}${e.error ? `  ${e.error.code}: ${e.error.message}` : ''}`,
          );
        }
      }),
    );

  audit
    .command('head')
    .description('the current head (seq and hash): keep it elsewhere to anchor later verifications')
    .action(() =>
      withSignedClient(program, async (client) =>
        console.log(JSON.stringify((await client.call<{ head: unknown }>(AUDIT_PATTERNS.head)).head)),
      ),
    );
}
