import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { scanOrdered, type StoredEvent } from '@conclave/event-log';
import { ensureStream, follow } from '@conclave/messaging';
import { AuditEntry, AuditEntryContent, chainEntry, GENESIS_HASH } from '@conclave/registry-protocol';
import {
  ConclaveMetrics,
  IDS,
  IdGenerator,
  KvLease,
  leaseBucketOf,
  METRICS,
  NATS_CONNECTION,
  Reactor,
  Reactors,
  retryWithBackoff,
  Readiness,
  rejectionsStream,
  SERVICE_CONFIG,
  sha256Hex,
} from '@conclave/service-kit';
import { ConsumerMessages, DeliverPolicy, JetStreamClient, JetStreamManager, NatsConnection } from 'nats';
import { auditContentOf, rejectionEventOf } from './audit-entry';
import { AuditConfig } from './audit.config';
import { isIdentifiedRejection, RejectionsCheckpoint, rejectionsRecreatedContent, rejectionsResume } from './rejections-feed';

export interface AuditQuery {
  proposal_id?: string;
  actor?: string;
  action?: string;
  outcome?: 'recorded' | 'rejected';
  /** Entries with seq greater than this (paging). */
  after_seq?: number;
  limit?: number;
}

const encoder = new TextEncoder();
/** See takeOver. */
const TAKEOVER_WARN_MS = 15_000;
/** How long loading the chain at start waits for its next entry before the start fails. */
const LOAD_IDLE_MS = 5_000;
const decoder = new TextDecoder();

/**
 * The tamper-evident audit log (RFC 14.6): every event of the log, and every refused command
 * (the CommandRejected records that intake publishes to `<event stream>_REJECTIONS`), becomes
 * one entry of a SHA-256 hash chain, in the order they reach this service, stored as one
 * message per entry in the JetStream stream `<event stream>_AUDIT` (file storage, entry seq =
 * stream seq, each publish expects the previous sequence, so nothing interleaves and a second
 * writer fails fast). Each entry holds its source's position (the log position, or the
 * rejection stream's sequence): after a restart the service resumes each source right after its
 * last entry, never twice, never skipping. A rejections stream deleted and created again (its
 * sequence starts over) is recognised before it is followed (`rejectionsResume`): the chain records
 * a `RejectionsStreamRecreated` entry and the new stream is audited from its first message, each
 * record once by its id.
 *
 * One writer at any replica count: the replica holding the `audit-chain` lease (`KvLease`,
 * `<event stream>_LEASES`) follows the log and the rejections and appends; the others are
 * standbys that follow the chain stream itself, answer queries from it, and take the lease over
 * when the holder stops renewing it. A writer that finds the chain moved under it (a late write
 * of a holder that lost the lease) reads the entries it missed, so an event already in the chain
 * is skipped by its position, never written twice, and it appends only while it holds the lease.
 *
 * Entries are also held in memory for queries (fine to millions of entries; beyond that,
 * queries should read the stream).
 */
@Injectable()
export class AuditLog implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AuditLog.name);
  private readonly entries: AuditEntry[] = [];
  private readonly payloadHashes = new Map<string, string>();
  private readonly stream: string;
  private readonly subject: string;
  private readonly rejections: { stream: string; subject: string };
  private readonly reactor: Reactor<StoredEvent['event']>;
  private rejectionMessages: ConsumerMessages | undefined;
  private rejectionsFollowed = false;
  private chainMessages: ConsumerMessages | undefined;
  private chainFollowed = false;
  private stopping = false;
  private caughtUp = false;
  /** True from taking the lease until losing it: only then does anything reach the chain. */
  private writing = false;
  /** Bumped at each lease change, so a takeover overtaken by a loss stops where it is. */
  private generation = 0;
  readonly lease: KvLease;
  /** The takeover under way (or done) since this replica last took the lease. */
  private takingOver: Promise<void> | undefined;
  private js!: JetStreamClient;
  /** Appends one at a time, whichever source they come from. */
  private queue: Promise<void> = Promise.resolve();
  private lastLogPosition: string | undefined;
  private lastRejectionSeq = 0;
  /** The chain's last entry from the rejections stream: where that feed resumes, and what was audited there. */
  private lastRejection: RejectionsCheckpoint | undefined;
  /** Ids of the rejection records in the chain, so that a record met again is not audited twice. */
  private readonly auditedRejections = new Set<string>();

  constructor(
    reactors: Reactors,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: AuditConfig,
    readiness: Readiness,
    @Inject(IDS) ids: IdGenerator,
    @Optional() metrics?: ConclaveMetrics,
  ) {
    metrics?.observe(METRICS.auditChainEntries, {}, () => this.head.seq);
    this.stream = `${config.eventStream}_AUDIT`;
    this.subject = `${config.eventSubjectPrefix}.audit.chain`;
    this.rejections = rejectionsStream(config);
    // A standby is ready while it follows the chain (it answers queries); the holder once it caught up.
    readiness.register('audit-chain', () => this.chainFollowed && (!this.lease.held || this.caughtUp));
    readiness.register('audit-rejections-feed', () => !this.lease.held || this.rejectionsFollowed);
    this.reactor = reactors.create({
      name: 'audit',
      categories: '*',
      apply: (e) => (this.writing ? this.enqueue(() => this.appendEvent(e)) : undefined),
      standby: () => !this.lease.held,
    });
    this.lease = new KvLease(
      nc,
      {
        bucket: leaseBucketOf(config.eventStream),
        key: 'audit-chain',
        holder: `audit-${ids.next()}`,
        ttlMs: config.leaseMs ?? 10_000,
        replicas: config.logReplicas,
      },
      { acquired: () => (this.takingOver = this.takeOver()), lost: () => this.standDown() },
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    this.js = this.nc.jetstream();
    await ensureStream(jsm, { name: this.stream, subjects: [this.subject], replicas: this.config.logReplicas, duplicateWindowMs: 60_000 });
    await ensureStream(jsm, { name: this.rejections.stream, subjects: [this.rejections.subject], replicas: this.config.logReplicas });
    await this.loadEntries(jsm);
    // A chain feed not made in time at start is made again, as one that ends later is.
    await this.followChain().catch(async (err: Error) => {
      this.logger.warn(`chain feed not made yet: ${err.message}`);
      await this.refollow('chain', () => this.followChain());
    });
    await this.lease.start();
    // A replica that took the lease at once (the first, or the only one) starts as the writer, caught up.
    await this.takingOver;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    // Stops the writing (standDown) and releases the lease, so a standby takes over at once.
    await this.lease.stop();
    // stop(), not close(): on nats-server 2.9, close() of a consumer may wait forever.
    this.chainMessages?.stop();
  }

  /** This replica holds the lease: read what the chain has, then follow both sources after it. */
  private async takeOver(): Promise<void> {
    const generation = ++this.generation;
    // A takeover that has not finished in this time says where it waits (it goes on waiting).
    let step = 'reading the chain';
    const slow = setTimeout(() => this.logger.warn(`audit chain takeover still ${step} after ${TAKEOVER_WARN_MS} ms`), TAKEOVER_WARN_MS);
    try {
      await this.syncChain();
      if (generation !== this.generation) return;
      this.writing = true;
      const from = this.lastLogPosition ?? 'start';
      step = 'following the rejections';
      await this.followRejections(generation);
      if (generation !== this.generation) return;
      step = `catching up on the log after ${from}`;
      await this.reactor.start(from);
      if (generation !== this.generation) return;
      this.caughtUp = true;
      this.logger.log(`audit chain writer at seq ${this.head.seq}, log resumed after ${from}, rejections after ${this.lastRejectionSeq}`);
    } catch (err) {
      // Not started: give the lease up so that a replica that can write takes it.
      this.logger.error(`audit chain takeover failed: ${(err as Error).message}`);
      if (generation === this.generation && !this.stopping) {
        await this.lease.stop();
        if (!this.stopping) await this.lease.start();
      }
    } finally {
      clearTimeout(slow);
    }
  }

  /** The lease is gone (taken over, not renewed in time, or shutting down): stop writing at once. */
  private async standDown(): Promise<void> {
    ++this.generation;
    this.writing = false;
    this.caughtUp = false;
    const rejections = this.rejectionMessages;
    this.rejectionMessages = undefined;
    this.rejectionsFollowed = false;
    // stop(), not close(): on nats-server 2.9, close() may wait forever, and the lease waits for this.
    rejections?.stop();
    await this.reactor.stop();
    await this.queue.catch(() => undefined);
    this.logger.log(`audit chain standby at seq ${this.head.seq}`);
  }

  get head(): { seq: number; hash: string } {
    const last = this.last;
    return last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  query(q: AuditQuery): { entries: AuditEntry[]; head: { seq: number; hash: string }; next_after_seq: number | null } {
    const limit = Math.min(Math.max(q.limit ?? 100, 1), 1_000);
    const out: AuditEntry[] = [];
    let more = false;
    for (let i = q.after_seq ?? 0; i < this.entries.length; i++) {
      const e = this.entries[i];
      if (q.proposal_id !== undefined && e.proposal_id !== q.proposal_id) continue;
      if (q.actor !== undefined && e.actor !== q.actor) continue;
      if (q.action !== undefined && e.action !== q.action) continue;
      if (q.outcome !== undefined && e.outcome !== q.outcome) continue;
      if (out.length === limit) {
        more = true;
        break;
      }
      out.push(e);
    }
    return { entries: out, head: this.head, next_after_seq: more ? out[out.length - 1].seq : null };
  }

  /** The whole chain as JSON Lines, from the genesis: the input of `conclave audit verify`. */
  exportJsonl(): string {
    return this.entries.map((e) => JSON.stringify(e)).join('\n') + (this.entries.length ? '\n' : '');
  }

  private get last(): AuditEntry | undefined {
    return this.entries[this.entries.length - 1];
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work);
    this.queue = next.catch((err: Error) => this.logger.error(`audit append failed: ${err.message}`));
    return next;
  }

  private async appendEvent(stored: StoredEvent): Promise<void> {
    await this.write(
      () => auditContentOf(stored, this.payloadHashes),
      () => this.lastLogPosition === undefined || stored.position > this.lastLogPosition,
    );
  }

  private async appendRejection(seq: number, data: Uint8Array): Promise<void> {
    if (seq <= this.lastRejectionSeq) return;
    const content = this.rejectionContent(seq, data);
    if (isIdentifiedRejection(content) && this.auditedRejections.has(content.source_id)) {
      this.logger.warn(`rejection record ${content.source_id} (stream seq ${seq}) is already in the audit chain: not audited again`);
      return;
    }
    await this.write(
      () => content,
      () => seq > this.lastRejectionSeq,
    );
  }

  /**
   * Appends one entry while this replica writes, retrying through a NATS outage until the chain
   * stream has it: an entry is never skipped. The message id and expected sequence make a retry of
   * a stored entry harmless; a chain that moved on (another writer got there first) is read up to
   * its end, and the entry made again on it unless that writer already recorded this source item.
   */
  private async write(content: () => AuditEntryContent, isNew: () => boolean): Promise<void> {
    for (let attempt = 1; this.writing && isNew(); attempt++) {
      const entry = chainEntry(this.last, content(), sha256Hex);
      const data = encoder.encode(JSON.stringify(entry));
      try {
        await this.js.publish(this.subject, data, { msgID: `audit-${entry.seq}`, expect: { lastSequence: entry.seq - 1 } });
        this.remember(entry);
        return;
      } catch (err) {
        if (this.stopping) throw err;
        if (isWrongLastSequence(err)) {
          this.logger.warn(`audit chain moved past seq ${entry.seq - 1} under this writer: reading it`);
          await this.syncChain().catch((e: Error) => this.logger.warn(`audit chain not read yet: ${e.message}`));
          continue;
        }
        if (attempt === 1 || attempt % 20 === 0)
          this.logger.warn(`audit entry ${entry.seq} not stored yet (attempt ${attempt}): ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, Math.min(2_000, 50 * 2 ** Math.min(attempt, 6))));
      }
    }
  }

  /** Reads every entry the chain stream has beyond ours (from its leader), in order. */
  private async syncChain(): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const last = (await jsm.streams.info(this.stream)).state.last_seq;
    for (let seq = this.head.seq + 1; seq <= last; seq = this.head.seq + 1) {
      const m = await jsm.streams.getMessage(this.stream, { seq });
      this.remember(JSON.parse(decoder.decode(m.data)) as AuditEntry);
    }
  }

  /**
   * Every replica follows the chain stream from its last entry (an ordered consumer): a standby
   * so that its queries and a takeover start from the chain's end, the writer harmlessly (its own
   * entries are already there). Made again from the same place when it ends.
   */
  private async followChain(): Promise<void> {
    const consumer = await this.js.consumers.get(this.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.head.seq + 1,
    });
    const messages = await follow(consumer);
    this.chainMessages = messages;
    this.chainFollowed = true;
    void (async () => {
      for await (const m of messages) this.remember(JSON.parse(decoder.decode(m.data)) as AuditEntry);
    })()
      .catch((err: Error) => this.logger.warn(`chain feed interrupted: ${err.message}`))
      .finally(() => {
        this.chainFollowed = false;
        if (!this.stopping) void this.refollow('chain', () => this.followChain());
      });
  }

  /**
   * An ordered consumer on the rejections stream from just after the last one in the chain (or
   * from its start when the stream was made again); when it ends (a NATS restart, a deleted
   * stream or consumer) it is made again from the same place.
   */
  private async followRejections(generation = this.generation): Promise<void> {
    const from = await this.rejectionsStart();
    const consumer = await this.js.consumers.get(this.rejections.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
    });
    // Ends at once when its stream or consumer goes, instead of following a stream made again
    // from where the old one was: only rejectionsStart may say where a new stream starts.
    const messages = await follow(consumer, { abort_on_missing_resource: true });
    // Stood down meanwhile: this feed is not the writer's, and no later takeover would stop it.
    if (generation !== this.generation || !this.writing) return void messages.stop();
    this.rejectionMessages = messages;
    this.rejectionsFollowed = true;
    // A deleted stream or consumer, or a feed gone silent, ends the feed: /readyz says so until it
    // is made again (the library alone would wait for missed heartbeats and say nothing).
    void (async () => {
      for await (const s of await messages.status()) {
        if (['consumer_deleted', 'stream_not_found', 'consumer_not_found', 'no_responders', 'heartbeats_missed'].includes(s.type)) {
          this.logger.warn(`rejections feed lost (${s.type}): not ready until it is followed again`);
          messages.stop();
          return;
        }
      }
    })().catch(() => undefined);
    void (async () => {
      for await (const m of messages) {
        if (this.rejectionMessages !== messages) break;
        await this.enqueue(() => this.appendRejection(m.seq, m.data));
      }
    })()
      .catch((err: Error) => this.logger.warn(`rejections feed interrupted: ${err.message}`))
      .finally(() => {
        this.rejectionsFollowed = false;
        // Closed on purpose when the lease is lost; resumed only while this replica writes.
        if (!this.stopping && this.writing && this.rejectionMessages === messages)
          void this.refollow('rejections', async () => {
            await this.queue;
            if (this.writing) await this.followRejections();
          });
      });
  }

  /**
   * Where to follow the rejections stream from. When it is not the stream the chain followed (it
   * was deleted and created again), records that in the chain first, so that the new stream's
   * entries follow a marker of their own, then starts from its first message.
   */
  private async rejectionsStart(): Promise<number> {
    const jsm = await this.nc.jetstreamManager();
    const info = await jsm.streams.info(this.rejections.stream);
    const checkpoint = this.lastRejection;
    const seq = Number(checkpoint?.position ?? 0);
    let atCheckpoint: AuditEntryContent | undefined;
    if (seq > 0 && seq >= info.state.first_seq && seq <= info.state.last_seq) {
      const stored = await jsm.streams.getMessage(this.rejections.stream, { seq }).catch(() => undefined);
      if (stored) atCheckpoint = this.rejectionContent(seq, stored.data);
    }
    const resume = rejectionsResume(checkpoint, info.state, atCheckpoint);
    if (!resume.recreated) return resume.from;
    this.logger.warn(
      `rejections stream ${this.rejections.stream} was created again (at ${info.created}): ${resume.reason}; ` +
        `auditing it from sequence 1 (refusals the old stream held after sequence ${seq} were not audited)`,
    );
    const marker = rejectionsRecreatedContent(this.rejections.stream, info.created, new Date().toISOString(), 'audit');
    await this.enqueue(() =>
      this.write(
        () => marker,
        () => this.lastRejection === checkpoint,
      ),
    );
    if (this.lastRejection === checkpoint) throw new Error('the recreation of the rejections stream is not in the chain yet');
    return resume.from;
  }

  /**
   * A message of the rejections stream as its audit entry's content: validated and forced to a
   * rejection; a malformed message is recorded as such, never thrown.
   */
  private rejectionContent(seq: number, data: Uint8Array): AuditEntryContent {
    const event = rejectionEventOf(data, seq, new Date().toISOString()) as StoredEvent['event'];
    return auditContentOf(
      {
        stream: this.rejections.stream,
        category: 'rejection',
        event,
        position: String(seq),
        version: String(seq),
        previous: undefined,
        endOfCommit: true,
      },
      new Map(),
    );
  }

  private async refollow(feed: string, follow: () => Promise<void>): Promise<void> {
    const resumed = await retryWithBackoff(follow, {
      waitFirst: true,
      stopped: () => this.stopping,
      onFailure: (err) => this.logger.warn(`${feed} feed not resumed yet: ${(err as Error).message}`),
    });
    if (resumed) this.logger.log(`${feed} feed resumed at chain seq ${this.head.seq}`);
  }

  /**
   * The chain as stored, read once at start by an ordered consumer (one stream of messages, not a
   * request per entry: ~100,000 entries a second), up to the last sequence that existed then.
   */
  private async loadEntries(jsm: JetStreamManager): Promise<void> {
    const info = await jsm.streams.info(this.stream);
    const last = info.state.last_seq;
    if (info.state.messages === 0) return;
    await scanOrdered(this.js, this.subject, last, LOAD_IDLE_MS, (m) => this.remember(JSON.parse(decoder.decode(m.data)) as AuditEntry));
  }

  /** Adds the chain's next entry (whoever wrote it); one already held is ignored, a gap waits for syncChain. */
  private remember(entry: AuditEntry): void {
    if (entry.seq !== this.head.seq + 1) return;
    this.entries.push(entry);
    if (entry.proposal_id && entry.payload_hash && entry.action === 'ProposalSubmitted')
      this.payloadHashes.set(entry.proposal_id, entry.payload_hash);
    if (entry.stream === this.rejections.stream) {
      this.lastRejectionSeq = Number(entry.position);
      this.lastRejection = entry;
      if (isIdentifiedRejection(entry)) this.auditedRejections.add(entry.source_id);
    } else if (entry.position !== undefined) this.lastLogPosition = entry.position;
  }
}

const WRONG_LAST_SEQUENCE = 10071;

function isWrongLastSequence(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence/i.test(e?.message ?? '');
}
