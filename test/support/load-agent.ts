import { NatsConnection } from 'nats';
import { ulid } from 'ulid';
import type { CommandAttempt, Reply } from './invariants';

/**
 * Outside agents as a load generator: plain JSON over `nc.request` (the DESIGN section 5
 * contract, no SDK), each proposal followed at once by its responses, sent concurrently. Every
 * attempt and its reply (or its absence) is recorded for the invariant checker.
 */
export interface LoadOptions {
  /** Subject prefix of the deployment (the harness's `prefix`). */
  prefix: string;
  /** Request timeout per attempt. Default 5 s. */
  timeoutMs?: number;
  /**
   * Retry an attempt that got no reply (timeout, no responders, connection down) or a transient
   * refusal (CONFLICT, INTERNAL) until this long after the first try. 0: never retry.
   */
  retryForMs?: number;
}

export interface ProposalPlan {
  domain: string;
  quorum: number;
  responses: Array<{ participant_id: string; response_type: 'endorse' | 'challenge' }>;
  /** expires_at this long after the proposal is posted; none when absent. */
  expiresInMs?: number;
}

/** What happened to one proposal: accepted means the reply (or a retry's refusal as a duplicate) says it is in the log. */
export interface ProposalOutcome {
  proposal_id: string;
  proposed: boolean;
  /** Responses acknowledged as recorded. */
  responded: number;
  /** Replies that were not ok: true, first attempt (code or `no-reply`). */
  refusals: string[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const vote = { confidence: 0.9, domain_authority: 0.9, trust_score: 0.9 };
const TRANSIENT = new Set(['CONFLICT', 'INTERNAL']);

export class LoadAgent {
  readonly attempts: CommandAttempt[] = [];
  private readonly timeoutMs: number;
  private readonly retryForMs: number;

  /** `nc` is a function so a test can swap the connection (it never needs to today). */
  constructor(
    private readonly nc: () => NatsConnection,
    private readonly options: LoadOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.retryForMs = options.retryForMs ?? 0;
  }

  /** Posts the proposal, then its responses concurrently (each as soon as the proposal is acknowledged). */
  async post(plan: ProposalPlan, i: number): Promise<ProposalOutcome> {
    const proposal_id = ulid();
    const outcome: ProposalOutcome = { proposal_id, proposed: false, responded: 0, refusals: [] };
    const now = new Date().toISOString();
    const proposed = await this.send(
      'propose',
      { proposal_id },
      'DUPLICATE_PROPOSAL_ID',
      {
        schema_version: '1.0',
        proposal_id,
        type: 'proposal',
        domain: plan.domain,
        author: `author-${i}`,
        payload: { i },
        quorum: plan.quorum,
        created_at: now,
        expires_at: plan.expiresInMs ? new Date(Date.parse(now) + plan.expiresInMs).toISOString() : null,
      },
      outcome,
    );
    if (!proposed) return outcome;
    outcome.proposed = true;
    const results = await Promise.all(
      plan.responses.map((r) =>
        this.send(
          'respond',
          { proposal_id, participant_id: r.participant_id },
          'DUPLICATE_RESPONSE',
          {
            schema_version: '1.0',
            proposal_id,
            participant_id: r.participant_id,
            response_type: r.response_type,
            reason: null,
            ...vote,
          },
          outcome,
        ),
      ),
    );
    outcome.responded = results.filter(Boolean).length;
    return outcome;
  }

  /**
   * One command with its retries; true when it is in the log by the replies' word (ok: true, or
   * after an unanswered attempt, the duplicate refusal that says an earlier attempt got through).
   */
  private async send(
    command: 'propose' | 'respond',
    key: { proposal_id: string; participant_id?: string },
    duplicateCode: string,
    body: object,
    outcome: ProposalOutcome,
  ): Promise<boolean> {
    const subject = `${this.options.prefix}.v1.${command}`;
    const deadline = Date.now() + this.retryForMs;
    let unanswered = false;
    for (let attempt = 0; ; attempt++) {
      let reply: Reply | undefined;
      try {
        const msg = await this.nc().request(subject, encoder.encode(JSON.stringify(body)), { timeout: this.timeoutMs });
        reply = JSON.parse(decoder.decode(msg.data)) as Reply;
      } catch {
        reply = undefined;
      }
      this.attempts.push({ command, ...key, reply } as CommandAttempt);
      if (reply?.ok) return true;
      if (reply && unanswered && reply.error.code === duplicateCode) return true;
      if (attempt === 0) outcome.refusals.push(reply ? reply.error.code : 'no-reply');
      if (reply && !TRANSIENT.has(reply.error.code)) return false;
      if (reply === undefined) unanswered = true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * 2 ** Math.min(attempt, 5))));
    }
  }
}

/** Runs `fn` over `items` with at most `inFlight` at a time, in order of start. */
export async function pool<T, R>(items: readonly T[], inFlight: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}
