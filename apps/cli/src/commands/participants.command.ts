import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ConclaveClient, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import { natsLogin, NatsLoginOptions } from '../nats-connection';

/** Global options of the signed commands (registry and audit): who signs, with which key. */
export interface SigningOptions extends NatsLoginOptions {
  prefix: string;
  streamSuffix: string;
  json: boolean;
  participant?: string;
  keyFile?: string;
}

/** A client that signs as `--participant` with `--key-file` (PKCS#8 PEM) when both are given. */
export async function withSignedClient<T>(program: Command, fn: (client: ConclaveClient, json: boolean) => Promise<T>): Promise<T> {
  const o = program.opts<SigningOptions>();
  const client = await ConclaveClient.connect({
    ...natsLogin(o, process.env),
    prefix: o.prefix,
    streamSuffix: o.streamSuffix,
    signer: commandSigner(o),
  });
  try {
    return await fn(client, o.json);
  } finally {
    await client.close();
  }
}

/** Signs as `--participant` with `--key-file` when both are given; unsigned otherwise. */
export function commandSigner(o: Pick<SigningOptions, 'participant' | 'keyFile'>): ReturnType<typeof ed25519Signer> | undefined {
  return o.participant && o.keyFile ? ed25519Signer(o.participant, readFileSync(o.keyFile, 'utf8')) : undefined;
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** `conclave participants keygen|add|grant|revoke|rotate-key|list|show` (docs/security.md). */
export function registerParticipantCommands(program: Command): void {
  if (!program.options.some((opt) => opt.long === '--participant')) {
    program
      .option('--participant <id>', 'sign commands as this registered participant', process.env['CONCLAVE_PARTICIPANT'])
      .option('--key-file <path>', "the participant's Ed25519 private key (PKCS#8 PEM)", process.env['CONCLAVE_KEY_FILE']);
  }
  const run = <T>(fn: (client: ConclaveClient, json: boolean) => Promise<T>) => withSignedClient(program, fn);
  const show = (json: boolean, reply: unknown) => console.log(json ? JSON.stringify(reply) : JSON.stringify(reply, null, 2));
  const participants = program.command('participants').description('the participant registry: keys, roles, domain grants');

  participants
    .command('keygen')
    .description('make an Ed25519 key pair: prints the public key, writes the private key (PEM) to --out')
    .option('--out <file>', 'where to write the private key (mode 600); stdout when absent')
    .option('--id <participant_id>', 'also print the CONCLAVE_BOOTSTRAP_ADMIN line for this id')
    .action((o: { out?: string; id?: string }) => {
      const keys = generateParticipantKeys();
      if (o.out) writeFileSync(o.out, keys.privateKeyPem, { mode: 0o600 });
      else process.stdout.write(keys.privateKeyPem);
      console.log(`public key: ${keys.publicKey}`);
      if (o.id) console.log(`CONCLAVE_BOOTSTRAP_ADMIN=${o.id}=${keys.publicKey}`);
    });

  participants
    .command('add <participant_id>')
    .description('register a participant (administrator)')
    .requiredOption('--public-key <key>', 'Ed25519 public key, base64url (from keygen)')
    .option('--roles <roles>', 'comma-separated: agent, human-resolver, administrator', 'agent')
    .option('--clearance <level>', 'public, internal (default), confidential or restricted')
    .option('--name <display_name>')
    .action((id: string, o: { publicKey: string; roles: string; clearance?: string; name?: string }) =>
      run(async (client, json) =>
        show(
          json,
          await client.call(REGISTRY_PATTERNS.register, {
            participant_id: id,
            public_key: o.publicKey,
            roles: list(o.roles),
            clearance: o.clearance,
            display_name: o.name,
          }),
        ),
      ),
    );

  participants
    .command('grant <participant_id> <domain>')
    .description('grant a domain and its subtree, with the factors stamped on responses there (administrator)')
    .requiredOption('--authority <n>', 'domain_authority in [0, 1]', Number)
    .requiredOption('--trust <n>', 'trust_score in [0, 1]', Number)
    .option('--actions <actions>', 'comma-separated: propose, respond, escalate, resolve (default all)')
    .action((id: string, domain: string, o: { authority: number; trust: number; actions?: string }) =>
      run(async (client, json) =>
        show(
          json,
          await client.call(REGISTRY_PATTERNS.grant, {
            participant_id: id,
            domain,
            domain_authority: o.authority,
            trust_score: o.trust,
            ...(o.actions ? { actions: list(o.actions) } : {}),
          }),
        ),
      ),
    );

  participants
    .command('revoke <participant_id>')
    .description('revoke a key (--key), a domain grant (--domain), or the participant itself (--all)')
    .option('--key <key_id>')
    .option('--domain <domain>')
    .option('--all', 'deactivate the participant')
    .option('--reason <text>')
    .action((id: string, o: { key?: string; domain?: string; all?: boolean; reason?: string }) =>
      run(async (client, json) => {
        if ([o.key, o.domain, o.all].filter(Boolean).length !== 1) throw new Error('give exactly one of --key, --domain, --all');
        if (o.key)
          return show(json, await client.call(REGISTRY_PATTERNS.revokeKey, { participant_id: id, key_id: o.key, reason: o.reason }));
        if (o.domain) return show(json, await client.call(REGISTRY_PATTERNS.revokeGrant, { participant_id: id, domain: o.domain }));
        return show(json, await client.call(REGISTRY_PATTERNS.deactivate, { participant_id: id, reason: o.reason }));
      }),
    );

  participants
    .command('rotate-key <participant_id>')
    .description(
      "replace the active key: an administrator's rotation of another participant takes effect at once; your own waits for the cool-down (the current key works until then and can cancel it)",
    )
    .requiredOption('--public-key <key>', 'the new Ed25519 public key, base64url')
    .action((id: string, o: { publicKey: string }) =>
      run(async (client, json) =>
        show(json, await client.call(REGISTRY_PATTERNS.rotateKey, { participant_id: id, public_key: o.publicKey })),
      ),
    );

  participants
    .command('cancel-rotation <participant_id>')
    .description('cancel a pending key rotation (the participant itself, with its current key, or an administrator)')
    .option('--reason <text>')
    .action((id: string, o: { reason?: string }) =>
      run(async (client, json) =>
        show(json, await client.call(REGISTRY_PATTERNS.cancelRotation, { participant_id: id, reason: o.reason })),
      ),
    );

  participants
    .command('list')
    .description('every participant with roles, clearance, keys and grants (administrator)')
    .action(() =>
      run(async (client, json) => {
        const { participants: all } = await client.call<{
          participants: Array<{
            participant_id: string;
            roles: string[];
            clearance: string;
            grants: Record<string, { actions: string[]; domain_authority: number; trust_score: number }>;
            keys: Array<{ key_id: string; status: string }>;
          }>;
        }>(REGISTRY_PATTERNS.list);
        if (json) return console.log(JSON.stringify(all));
        for (const p of all) {
          const grants = Object.values(p.grants).map(
            (g) => `${Object.keys(p.grants).find((d) => p.grants[d] === g)}(${g.domain_authority}/${g.trust_score})`,
          );
          const keys = p.keys.map((k) => `${k.key_id}:${k.status}`).join(' ');
          console.log(
            `${p.participant_id.padEnd(24)} ${p.roles.join(',').padEnd(28)} ${p.clearance.padEnd(12)} ${keys.padEnd(20)} ${grants.join(' ')}`,
          );
        }
      }),
    );

  participants
    .command('show <participant_id>')
    .description('one participant (yourself, or anyone as an administrator)')
    .action((id: string) => run(async (client, json) => show(json, await client.call(REGISTRY_PATTERNS.get, { participant_id: id }))));
}
