import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  AcpError,
  DOMAIN_POLICY_STREAM_CATEGORY,
  DomainPolicyDocument,
  DomainPolicySet,
  DomainPolicyState,
  decideSetDomainPolicy,
  domainPolicyStream,
  evolveDomainPolicy,
  governingDomains,
  parseDomainPolicy,
} from '@conclave/acp-protocol';
import { AggregateCache, CommandConflictError, EventLog, handleCommand, LogEvent } from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';

/**
 * The domains' policy documents (RFC 18.1/18.2), one `domain-policy-<domain>` stream each:
 * administered through `<prefix>.v1.policies.*`, looked up for each submission. Loads ask the
 * log for each stream's version, so a document set through one replica governs the next
 * proposal submitted through any other.
 */
@Injectable()
export class DomainPolicies implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly cache: AggregateCache<DomainPolicyState, DomainPolicySet>;
  private readonly decider = { decide: decideSetDomainPolicy, evolve: evolveDomainPolicy };
  /** Documents validated once per version (a recorded version never changes). */
  private readonly checked = new Map<string, DomainPolicyDocument>();

  constructor(@Inject(EVENT_LOG) private readonly log: EventLog<LogEvent>) {
    this.cache = new AggregateCache<DomainPolicyState, DomainPolicySet>(log as unknown as EventLog<DomainPolicySet>, {
      categories: [DOMAIN_POLICY_STREAM_CATEGORY],
      initial: () => null,
      evolve: evolveDomainPolicy,
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.cache.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.cache.stop();
  }

  /**
   * The document that governs `domain`: its own, else its nearest ancestor's; validated again as
   * it is loaded, so that a document this version cannot read stops submissions in its domain
   * (INTERNAL, naming it) instead of deciding them by rules it does not understand.
   */
  async governing(domain: string): Promise<DomainPolicyDocument | undefined> {
    for (const d of governingDomains(domain)) {
      const { state } = await this.cache.load(domainPolicyStream(d));
      if (state) return this.validated(state);
    }
    return undefined;
  }

  private validated(document: DomainPolicyDocument): DomainPolicyDocument {
    const key = `${document.domain}@${document.version}`;
    const known = this.checked.get(key);
    if (known) return known;
    try {
      const parsed = parseDomainPolicy(document);
      this.checked.set(key, parsed);
      return parsed;
    } catch (err) {
      const why = err instanceof AcpError ? `${err.code} on ${err.field}: ${err.message}` : String(err);
      throw new AcpError(
        'INTERNAL',
        `the policy document of ${document.domain} (version ${document.version}) in the log does not validate: ${why}`,
      );
    }
  }

  /** The domain's own document, at `version` when given (every version stays in the log). */
  async get(domain: string, version?: number): Promise<DomainPolicyDocument | null> {
    const stream = domainPolicyStream(domain);
    if (version === undefined) return (await this.cache.load(stream)).state;
    const read = await this.log.read(stream);
    const events = (read.exists ? read.events : []) as unknown as Array<{ event: DomainPolicySet }>;
    const found = events.find((e) => e.event.data.document.version === version);
    return found?.event.data.document ?? null;
  }

  async set(document: DomainPolicyDocument, meta: { command_id: string; now: string; actor: string }): Promise<DomainPolicyDocument> {
    try {
      const outcome = await handleCommand(this.cache, domainPolicyStream(document.domain), this.decider, { ...meta, data: { document } });
      return outcome.state ?? document;
    } catch (err) {
      if (err instanceof CommandConflictError) throw new AcpError('CONFLICT', `the policy of ${document.domain} kept changing; retry`);
      throw err;
    }
  }
}
