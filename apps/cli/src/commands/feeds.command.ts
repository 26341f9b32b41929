import type { Command } from 'commander';
import { FeedProvision, provisionFeed, ProvisionedFeed, withJetStreamApiPrefix } from '@conclave/sdk';
import { connect, JetStreamManager } from 'nats';
import { natsJsApiPrefix, natsLogin, NatsLoginOptions } from '../nats-connection';

/** A durable name as JetStream takes it: no `.`, `*`, `>` or whitespace. */
const DURABLE = /^[^.*>\s]+$/;

export interface ProvisionOptions {
  stream: string;
  durable: string;
  filter?: string;
  from?: string;
  ackWaitMs?: number;
}

/** The options of `feeds provision` as a FeedProvision, or a usage error naming the option. */
export function feedProvision(o: ProvisionOptions): FeedProvision {
  if (!DURABLE.test(o.durable)) throw new FeedUsageError(`--durable must hold no '.', '*', '>' or spaces, got "${o.durable}"`);
  if (o.from !== undefined && o.from !== 'all' && o.from !== 'new') throw new FeedUsageError(`--from is all or new, got "${o.from}"`);
  if (o.ackWaitMs !== undefined && !(Number.isInteger(o.ackWaitMs) && o.ackWaitMs > 0)) {
    throw new FeedUsageError('--ack-wait-ms must be a positive whole number');
  }
  return { stream: o.stream, durable: o.durable, filter: o.filter, from: o.from as FeedProvision['from'], ackWaitMs: o.ackWaitMs };
}

/** A usage mistake in the feed options: printed, exit 64, before connecting. */
export class FeedUsageError extends Error {
  readonly exitCode = 64;
}

/** One line per feed, or its JSON. */
export function describeProvisioned(feed: ProvisionedFeed, json: boolean): string {
  const { info, created } = feed;
  if (json) return JSON.stringify({ created, stream: info.stream_name, durable: info.name, filter: info.config.filter_subject ?? null });
  const filter = info.config.filter_subject ? ` filtered on ${info.config.filter_subject}` : ' (every subject)';
  return `${created ? 'provisioned' : 'already provisioned'}: feed ${info.name} on ${info.stream_name}${filter}, ${info.num_pending} pending`;
}

/**
 * `conclave feeds provision`: an operator makes the durable pull feed that an agent, a downstream
 * system or a person binds to (they may not create consumers under NATS accounts, deploy/nats).
 * Run it as a user that may create consumers (the services' user, or an administrator's).
 */
export function registerFeedCommands(program: Command): void {
  const manager = withJetStreamManager(program);
  const feeds = program.command('feeds').description('JetStream feeds for clients that may not create consumers (NATS accounts)');
  feeds
    .command('provision')
    .description('make (or find) a durable pull consumer a client binds to: feed-<nats user> under deploy/nats/nats-accounts.conf')
    .requiredOption('--stream <name>', 'ACP_DECISIONS, ACP_PROPOSALS, COUNCIL_DECISIONS, ACP_ESCALATIONS (with the deployment suffix)')
    .requiredOption('--durable <name>', 'the feed name the client binds to, e.g. feed-alice')
    .option('--filter <subject>', 'only messages on this subject, e.g. acp.v1.decisions.risk.>')
    .option('--from <all|new>', 'where a new feed starts (default all)')
    .option('--ack-wait-ms <ms>', 'redelivery after this long without an acknowledgement (default 30000)', (v) => Number(v))
    .action((o: ProvisionOptions) => {
      const feed = feedProvision(o);
      return manager(async (jsm) =>
        console.log(describeProvisioned(await provisionFeed(jsm, feed), program.opts<{ json: boolean }>().json)),
      );
    });
}

/** The JetStream manager of a connection logged in as the global options say. */
function withJetStreamManager(program: Command) {
  return async (fn: (jsm: JetStreamManager) => Promise<void>): Promise<void> => {
    const opts = program.opts<NatsLoginOptions>();
    const nc = await connect(natsLogin(opts, process.env));
    const apiPrefix = natsJsApiPrefix(opts);
    try {
      await fn(await (apiPrefix ? withJetStreamApiPrefix(nc, apiPrefix) : nc).jetstreamManager());
    } finally {
      await nc.drain();
    }
  };
}
