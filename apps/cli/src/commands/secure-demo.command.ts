import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import type { DomainGrant, ParticipantRecord, Role } from '@conclave/registry-protocol';
import type { CouncilDecisionMessage, ParticipantKeyPair } from '@conclave/sdk';
import { ConclaveClient, ConclaveError, ed25519Signer, generateParticipantKeys } from '@conclave/sdk';
import type { NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { COUNCIL_DEMO_MEMBERS, runCouncilDemo } from './council-demo.command';
import { APPENDIX_C, DEMO_PROPOSER, runDemo } from './demo.command';

/** What the demo sets of a grant (the registry stamps when and by whom). */
type DemoGrant = Pick<DomainGrant, 'domain' | 'actions' | 'domain_authority' | 'trust_score'>;

/** A demo participant as the registry should hold it. */
export interface DemoParticipant {
  participant_id: string;
  roles: Role[];
  grants: DemoGrant[];
}

/** The council demo's decision owner: it starts the run, so it proposes in the run's domain. */
export const COUNCIL_DEMO_OWNER = 'demo-owner';

/** Factors of a grant that allows no response: they never weigh a vote. */
const NO_VOTE = { domain_authority: 0, trust_score: 0 };

/**
 * Everyone the demo acts for, with the grants that make it decide as Appendix C says: each
 * voter's grant on its scenario's domain carries the factors the RFC gives that vote (with
 * authentication on, factors come from the grant, never from the response), the proposer may
 * only propose, the human of C.4 may only resolve, and the council's owner and members.
 */
export function demoParticipants(): DemoParticipant[] {
  const byId = new Map<string, DemoParticipant>();
  const grant = (id: string, roles: Role[], g: DemoParticipant['grants'][number]) => {
    const p = byId.get(id) ?? { participant_id: id, roles, grants: [] };
    const same = p.grants.find((x) => x.domain === g.domain);
    if (same && (same.domain_authority !== g.domain_authority || same.trust_score !== g.trust_score))
      throw new Error(`demo: ${id} would need two grants on ${g.domain}`);
    if (same) same.actions = [...new Set([...same.actions, ...g.actions])];
    else p.grants.push(g);
    byId.set(id, p);
  };
  for (const s of APPENDIX_C) {
    grant(DEMO_PROPOSER, ['agent'], { domain: s.domain, actions: ['propose'], ...NO_VOTE });
    for (const v of s.votes) {
      grant(v.participant_id, ['agent'], {
        domain: s.domain,
        actions: ['respond'],
        domain_authority: v.domain_authority as number,
        trust_score: v.trust_score as number,
      });
    }
    if (s.humanResolution) grant(s.humanResolution.resolved_by, ['human-resolver'], { domain: s.domain, actions: ['resolve'], ...NO_VOTE });
  }
  // A council with no domain in its GoalContract is in `general`.
  grant(COUNCIL_DEMO_OWNER, ['agent'], { domain: 'general', actions: ['propose'], ...NO_VOTE });
  for (const id of [...COUNCIL_DEMO_MEMBERS.proposers, COUNCIL_DEMO_MEMBERS.chair])
    byId.set(id, { participant_id: id, roles: ['agent'], grants: [] });
  return [...byId.values()];
}

export interface SecureDemoSetupOptions {
  /** Where each participant's private key is written, `<id>.pem`, mode 600. */
  keysDir?: string;
  /** Earlier administrators to deactivate (those of earlier runs, whose keys are gone), by id prefix. */
  supersedePrefix?: string;
  print?: (line: string) => void;
}

/** The part of the registry's `get` reply the setup reads. */
interface RegistryView {
  participant: Pick<ParticipantRecord, 'participant_id' | 'roles' | 'grants'> & { status: 'active' | 'deactivated' };
}

/**
 * Registers the demo's participants through the signed registry API, as `admin` (an
 * administrator), each with a fresh Ed25519 key. Safe to run again against a registry that has
 * them: an existing participant gets the new key at once (an administrator's rotation of
 * another participant's key takes effect immediately), its roles and grants set back to the
 * demo's, other grants revoked, so the factors are Appendix C's whatever a previous run left.
 */
export async function setupSecureDemo(
  admin: ConclaveClient,
  adminId: string,
  options: SecureDemoSetupOptions = {},
): Promise<Map<string, ParticipantKeyPair>> {
  const keys = new Map<string, ParticipantKeyPair>();
  if (options.keysDir) mkdirSync(options.keysDir, { recursive: true, mode: 0o700 });
  let registered = 0;
  let updated = 0;
  for (const p of demoParticipants()) {
    const key = generateParticipantKeys();
    keys.set(p.participant_id, key);
    if (options.keysDir) {
      const file = join(options.keysDir, `${p.participant_id}.pem`);
      writeFileSync(file, key.privateKeyPem, { mode: 0o600 });
      chmodSync(file, 0o600);
    }
    const fresh = await admin
      .call(REGISTRY_PATTERNS.register, { participant_id: p.participant_id, roles: p.roles, public_key: key.publicKey })
      .then(
        () => true,
        (err: unknown) => {
          if (err instanceof ConclaveError && err.code === 'CONFLICT' && err.field === 'participant_id') return false;
          throw err;
        },
      );
    let current: RegistryView['participant']['grants'] = {};
    if (fresh) registered++;
    else {
      const { participant } = await admin.call<RegistryView>(REGISTRY_PATTERNS.get, { participant_id: p.participant_id });
      if (participant.status !== 'active')
        throw new Error(`demo: participant ${p.participant_id} is deactivated in this registry; the demo cannot act for it`);
      await admin.call(REGISTRY_PATTERNS.rotateKey, { participant_id: p.participant_id, public_key: key.publicKey });
      if ([...participant.roles].sort().join() !== [...p.roles].sort().join())
        await admin.call(REGISTRY_PATTERNS.update, { participant_id: p.participant_id, roles: p.roles });
      current = participant.grants;
      for (const domain of Object.keys(current)) {
        if (!p.grants.some((g) => g.domain === domain))
          await admin.call(REGISTRY_PATTERNS.revokeGrant, { participant_id: p.participant_id, domain });
      }
      updated++;
    }
    for (const g of p.grants) {
      const had = current[g.domain];
      const same =
        had &&
        had.domain_authority === g.domain_authority &&
        had.trust_score === g.trust_score &&
        [...had.actions].sort().join() === [...g.actions].sort().join();
      if (!same) await admin.call(REGISTRY_PATTERNS.grant, { participant_id: p.participant_id, ...g });
    }
  }
  options.print?.(
    `registered ${registered} demo participants, gave ${updated} already registered a new key${options.keysDir ? ` (private keys in ${options.keysDir})` : ''}`,
  );
  if (options.supersedePrefix) await retireEarlierAdministrators(admin, adminId, options.supersedePrefix, options.print);
  return keys;
}

async function retireEarlierAdministrators(admin: ConclaveClient, adminId: string, prefix: string, print?: (line: string) => void) {
  const { participants } = await admin.call<{ participants: Array<{ participant_id: string; roles: Role[] }> }>(REGISTRY_PATTERNS.list);
  for (const p of participants) {
    if (p.participant_id === adminId || !p.participant_id.startsWith(prefix) || !p.roles.includes('administrator')) continue;
    const { participant } = await admin.call<RegistryView>(REGISTRY_PATTERNS.get, { participant_id: p.participant_id });
    if (participant.status !== 'active') continue;
    await admin.call(REGISTRY_PATTERNS.deactivate, { participant_id: p.participant_id, reason: `superseded by ${adminId}` });
    print?.(`deactivated ${p.participant_id}, the administrator of an earlier run`);
  }
}

/** An attack of the demo and what the service answered. */
export interface DemoRefusal {
  attack: string;
  code: string;
  field?: string;
  /** Whether anything the attacker sent was recorded (it must not be). */
  recorded: boolean;
}

export interface SecureDemoOptions {
  prefix?: string;
  streamSuffix?: string;
  councilPrefix?: string;
  timeoutMs?: number;
}

export interface SecureDemoResult {
  decisions: DecisionEvent[];
  council: CouncilDecisionMessage;
  refusals: DemoRefusal[];
}

/**
 * The demo with authentication required: Appendix C and the council, every request signed by
 * the participant it acts for (keys from `setupSecureDemo`), then two attacks whose typed
 * refusals it prints: an unsigned proposal, and a registered participant voting in a domain it
 * has no grant for. Throws if an attack is accepted or leaves a trace.
 */
export async function runSecureDemo(
  nc: NatsConnection,
  keys: Map<string, ParticipantKeyPair>,
  print: (line: string) => void,
  options: SecureDemoOptions = {},
): Promise<SecureDemoResult> {
  const connect = (signer?: ReturnType<typeof ed25519Signer>) =>
    ConclaveClient.connect({ nc, prefix: options.prefix, streamSuffix: options.streamSuffix, signer });
  const signerOf = (id: string) => {
    const key = keys.get(id);
    if (!key) throw new Error(`demo: no key for ${id}`);
    return ed25519Signer(id, key.privateKeyPem);
  };
  const clients = new Map<string, ConclaveClient>();
  for (const p of demoParticipants()) clients.set(p.participant_id, await connect(signerOf(p.participant_id)));
  const as = (id: string) => {
    const client = clients.get(id);
    if (!client) throw new Error(`demo: ${id} is not a demo participant`);
    return client;
  };
  // Reading the decision feed is a JetStream read, not a command: nothing to sign.
  const unsigned = await connect();

  const decisions = await runDemo(unsigned, print, { as, timeoutMs: options.timeoutMs });
  const council = await runCouncilDemo(nc, print, {
    prefix: options.councilPrefix,
    streamSuffix: options.streamSuffix,
    timeoutMs: options.timeoutMs,
    owner: COUNCIL_DEMO_OWNER,
    signer: signerOf(COUNCIL_DEMO_OWNER),
    memberSigner: signerOf,
  });

  print('attacks: what the services refuse');
  const refusals: DemoRefusal[] = [];

  const forged = ulid();
  refusals.push(
    await attack(
      print,
      `an unsigned proposal in risk.credit claiming to be ${DEMO_PROPOSER}`,
      async () => {
        await unsigned.propose({ proposal_id: forged, domain: 'risk.credit', author: DEMO_PROPOSER, payload: { forged: true }, quorum: 1 });
      },
      async () => {
        const found = await as(DEMO_PROPOSER)
          .get(forged)
          .then(
            () => true,
            (err: unknown) => {
              if (err instanceof ConclaveError && err.code === 'PROPOSAL_NOT_FOUND') return false;
              throw err;
            },
          );
        return { recorded: found, note: found ? `proposal ${forged} exists` : `no proposal ${forged}` };
      },
    ),
  );

  const c1 = decisions.find((d) => d.domain === APPENDIX_C[0].domain);
  if (!c1) throw new Error('demo: no decision of C.1 to attack');
  const voter = 'junior-agent';
  const responsesOf = async () => (await as(DEMO_PROPOSER).get(c1.proposal_id)).responses.length;
  const before = await responsesOf();
  const grantsOf = demoParticipants()
    .find((p) => p.participant_id === voter)
    ?.grants.map((g) => g.domain)
    .join(', ');
  refusals.push(
    await attack(
      print,
      `${voter} (signed; granted ${grantsOf} only) endorses C.1's proposal in ${c1.domain}`,
      async () => {
        await as(voter).endorse(c1.proposal_id, { participant_id: voter, confidence: 1 });
      },
      async () => {
        const after = await responsesOf();
        return { recorded: after !== before, note: `C.1 has ${after} responses${after === before ? ', as before' : `, was ${before}`}` };
      },
    ),
  );
  return { decisions, council, refusals };
}

async function attack(
  print: (line: string) => void,
  what: string,
  send: () => Promise<void>,
  trace: () => Promise<{ recorded: boolean; note: string }>,
): Promise<DemoRefusal> {
  print(`  attack: ${what}`);
  let refusal: ConclaveError | undefined;
  try {
    await send();
  } catch (err) {
    if (!(err instanceof ConclaveError)) throw err;
    refusal = err;
  }
  const { recorded, note } = await trace();
  if (!refusal || recorded) {
    print(`  -> NOT STOPPED: ${refusal ? `refused ${refusal.code} but ${note}` : 'accepted'}`);
    throw new Error(`demo: the attack "${what}" was not stopped`);
  }
  const field = refusal.field ? ` (field ${refusal.field})` : '';
  print(`  -> refused ${refusal.code}${field}: ${refusal.message.replace(/^[A-Z_]+: /, '')}; nothing recorded (${note})`);
  return { attack: what, code: refusal.code, ...(refusal.field ? { field: refusal.field } : {}), recorded };
}
