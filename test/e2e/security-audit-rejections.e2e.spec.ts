import { INestApplication } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, JetStreamManager, NatsConnection, RetentionPolicy, StorageType, StreamConfig } from 'nats';
import { AuditEntry, verifyChain } from '@conclave/registry-protocol';
import { generateParticipantKeys } from '@conclave/sdk';
import { sha256Hex } from '@conclave/service-kit';
import { eventually } from '../support/conclave-harness';
import { ACCOUNT_PASSWORDS, AccountsDeployment, accountsTemplate, agentEntryFor } from '../support/accounts-nats';

/** `<event stream>_REJECTIONS` with the default stream name, as deploy/nats/nats-accounts.conf assumes. */
const REJECTIONS = 'CONCLAVE_EVENTS_REJECTIONS';
const RECREATED = 'RejectionsStreamRecreated';

/**
 * Refused commands reach the audit chain through the rejections stream. Deleting that stream and
 * creating it again (an operator's mistake, or NATS losing its data) restarts its sequence at 1;
 * the audit service must see that it follows another stream and audit the new one from its first
 * record, each refusal once, whether it was running at the time or restarted after. On a private
 * nats-server with deploy/nats/nats-accounts.conf (services as their user, authentication
 * required), with mallory, an agent, making the refusals.
 */
describe('security: refusals audited across a rejections stream made again', () => {
  const { conf, agentEntry } = accountsTemplate();
  const deployment = new AccountsDeployment(
    mkdtempSync(join(tmpdir(), 'conclave-accounts-audit-')),
    conf.replace(agentEntry, [agentEntry, agentEntryFor(agentEntry, 'mallory')].join('\n')),
    generateParticipantKeys(),
  );
  let audit: INestApplication;
  let mallory: NatsConnection;
  let jsm: JetStreamManager;
  let streamConfig: Partial<StreamConfig>;
  let sent = 0;

  /** One unsigned request refused by intake; its body (so its audited payload_hash) is unique. */
  const refusal = async (): Promise<string> => {
    const body = new TextEncoder().encode(JSON.stringify({ attempt: ++sent, at: Date.now() }));
    const reply = JSON.parse(new TextDecoder().decode((await mallory.request('acp.v1.list', body, { timeout: 5_000 })).data));
    expect(reply).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
    return createHash('sha256').update(body).digest('hex');
  };
  const refusals = async (n: number): Promise<string[]> => {
    const hashes: string[] = [];
    for (let i = 0; i < n; i++) hashes.push(await refusal());
    return hashes;
  };
  const chain = async (): Promise<AuditEntry[]> => {
    const url = (await audit.getUrl()).replace('[::1]', '127.0.0.1');
    const text = await (await fetch(`${url}/audit/export`)).text();
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEntry);
  };
  /** The chain once every hash is in it, each exactly once. */
  const auditedOnce = (hashes: string[], what: string): Promise<AuditEntry[]> =>
    eventually(
      async () => {
        const entries = await chain();
        const counts = hashes.map((h) => entries.filter((e) => e.action === 'rejected:list' && e.payload_hash === h).length);
        if (counts.some((c) => c > 1)) throw new Error(`${what}: a refusal audited twice`);
        return counts.every((c) => c === 1) ? entries : undefined;
      },
      30_000,
      what,
    );
  const recreate = async (): Promise<void> => {
    await jsm.streams.delete(REJECTIONS);
    await jsm.streams.add(streamConfig);
  };

  beforeAll(async () => {
    await deployment.start();
    audit = await deployment.startService('audit');
    mallory = await connect({
      servers: deployment.url,
      user: 'mallory',
      pass: ACCOUNT_PASSWORDS['CONCLAVE_MALLORY_PASSWORD'],
      inboxPrefix: '_INBOX_mallory',
    });
    jsm = await deployment.admin.nc.jetstreamManager();
    const info = await jsm.streams.info(REJECTIONS);
    streamConfig = {
      name: info.config.name,
      subjects: info.config.subjects,
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      duplicate_window: info.config.duplicate_window,
    };
  }, 60_000);

  afterAll(async () => {
    await mallory?.close().catch(() => undefined);
    await deployment.stop();
  });

  it('given refusals audited, when mallory tries to delete or purge the rejections stream, then the server refuses her', async () => {
    await auditedOnce(await refusals(3), 'the first refusals audited');
    for (const api of [`$JS.API.STREAM.DELETE.${REJECTIONS}`, `$JS.API.STREAM.PURGE.${REJECTIONS}`]) {
      await expect(mallory.request(api, new Uint8Array(), { timeout: 5_000 })).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    }
    expect((await jsm.streams.info(REJECTIONS)).state.messages).toBe(3);
  });

  it('given the stream deleted and created again under the running audit service, with the old records copied into it, when more refusals come than it had audited, then each new one is audited once after a recreation entry, no old one twice, and the chain verifies', async () => {
    const before = await chain();
    const old = before.filter((e) => e.action === 'rejected:list');
    // What an operator copying the old records over would add: the same bytes and record ids,
    // at other sequences of the new stream.
    const copies = [];
    for (let seq = 1; seq <= old.length; seq++) copies.push(await jsm.streams.getMessage(REJECTIONS, { seq }));
    await recreate();
    const first = await refusal();
    const js = deployment.admin.nc.jetstream();
    for (const m of copies) await js.publish(m.subject, m.data, { msgID: m.header.get('Nats-Msg-Id') });
    const hashes = [first, ...(await refusals(5))];
    const entries = await auditedOnce([...old.map((e) => e.payload_hash as string), ...hashes], 'the refusals of the new stream audited');
    const after = entries.slice(before.length);
    expect(after[0]).toMatchObject({ action: RECREATED, actor: 'audit', outcome: 'recorded', stream: REJECTIONS, position: '0' });
    // Sequence 1 is the first new refusal, 2 to 4 the copies (already audited), 5 on the others.
    const positions = [1, 5, 6, 7, 8, 9].map(String);
    expect(after.slice(1).map((e) => [e.action, e.position, e.payload_hash])).toEqual(
      hashes.map((h, i) => ['rejected:list', positions[i], h]),
    );
    expect(verifyChain(entries, sha256Hex)).toMatchObject({ ok: true, entries: entries.length });
  });

  it('given the audit service stopped, the stream made again and more refusals than its last audited sequence, when it starts, then it audits the new stream from its first record, none twice, and the chain verifies', async () => {
    const earlier = (await chain()).filter((e) => e.action === 'rejected:list');
    await deployment.stopService(audit);
    await recreate();
    const hashes = await refusals(12);
    audit = await deployment.startService('audit');
    const entries = await auditedOnce([...earlier.map((e) => e.payload_hash as string), ...hashes], 'the refusals made while it was down');
    expect(entries.filter((e) => e.action === RECREATED)).toHaveLength(2);
    const last = entries.slice(entries.map((e) => e.action).lastIndexOf(RECREATED));
    expect(last.filter((e) => e.action === 'rejected:list').map((e) => e.payload_hash)).toEqual(hashes);
    expect(verifyChain(entries, sha256Hex)).toMatchObject({ ok: true, entries: entries.length });
  });

  it('given the service restarted with nothing new, then it resumes after its last record: no recreation entry, nothing audited twice', async () => {
    const before = await chain();
    await deployment.stopService(audit);
    audit = await deployment.startService('audit');
    const hashes = await refusals(2);
    const entries = await auditedOnce(hashes, 'the refusals after the restart');
    expect(entries.slice(before.length).map((e) => e.action)).toEqual(['rejected:list', 'rejected:list']);
    expect(verifyChain(entries, sha256Hex)).toMatchObject({ ok: true, entries: entries.length });
  });
});
