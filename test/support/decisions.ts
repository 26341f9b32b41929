import type { DecisionEvent } from '@conclave/acp-protocol';
import type { ConclaveClient } from '@conclave/sdk';

/**
 * Collects decision events from the ACP_DECISIONS stream, as a downstream consumer would, and
 * lets a test await the ones it expects (no sleeps: each wait ends when the event arrives).
 */
export class DecisionCollector {
  readonly received: DecisionEvent[] = [];
  private waiters: Array<{ test: () => boolean; resolve: () => void }> = [];
  private readonly iterator: AsyncGenerator<DecisionEvent>;
  private readonly loop: Promise<void>;

  constructor(client: ConclaveClient, options: { domain?: string; durable?: string; bind?: boolean } = {}) {
    const iterator = client.decisions({ ...options, from: 'all' });
    this.iterator = iterator;
    this.loop = (async () => {
      for await (const d of iterator) {
        this.received.push(d);
        this.waiters = this.waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
      }
    })().catch(() => undefined);
  }

  for(proposalId: string): DecisionEvent[] {
    return this.received.filter((d) => d.proposal_id === proposalId);
  }

  /** Waits until `count` decisions for the proposal have arrived. */
  async waitFor(proposalId: string, count = 1, timeoutMs = 15_000): Promise<DecisionEvent[]> {
    await this.until(() => this.for(proposalId).length >= count, timeoutMs, `${count} decision(s) for ${proposalId}`);
    return this.for(proposalId);
  }

  async until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (test()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      this.waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }
}
