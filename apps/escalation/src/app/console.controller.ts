import { Controller, Get, Header, Headers, Ip, OnModuleDestroy, Redirect, Req, Res, UseFilters } from '@nestjs/common';
import type { Request, Response } from 'express';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { Identity, ProposalReadPolicy } from '@conclave/service-kit';
import { DecisionFeed } from './decision-feed';
import { EscalationReaders, httpRequest } from './escalation-readers';
import { HttpErrorFilter } from './http-error.filter';

/** Where the console's static files are: beside the bundle (dist) or in the sources (tests, dev). */
function consoleDir(): string {
  const candidates = [join(__dirname, 'console'), join(__dirname, '..', 'console'), join(process.cwd(), 'apps/escalation/src/console')];
  const found = candidates.find((d) => existsSync(join(d, 'index.html')));
  if (!found) throw new Error(`console files not found in ${candidates.join(', ')}`);
  return found;
}

/** The page loads only its own script and talks only to this origin; no other site may frame it. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The web console: plain HTML and one small vanilla script, no build step. It uses the HTTP API
 * for the inbox and the resolution, and this stream for the live decisions: fetched with the same
 * token as the API, only decisions of domains the reader has a grant on when each is sent, the
 * payload summary withheld where the reader's clearance does not cover the proposal; the stream
 * ends when the reader is deactivated.
 */
@Controller()
@UseFilters(HttpErrorFilter)
export class ConsoleController implements OnModuleDestroy {
  private readonly html: string;
  private readonly script: string;
  private readonly open = new Set<Response>();

  constructor(
    private readonly feed: DecisionFeed,
    private readonly readers: EscalationReaders,
    private readonly policy: ProposalReadPolicy,
  ) {
    const dir = consoleDir();
    this.html = readFileSync(join(dir, 'index.html'), 'utf8');
    this.script = readFileSync(join(dir, 'console.js'), 'utf8');
  }

  @Get()
  @Redirect('/console/', 302)
  root(): void {
    return;
  }

  /** `/console` and `/console/` (Express routes ignore a trailing slash). */
  @Get('console')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @Header('Content-Security-Policy', CSP)
  @Header('X-Frame-Options', 'DENY')
  @Header('X-Content-Type-Options', 'nosniff')
  @Header('Referrer-Policy', 'no-referrer')
  page(): string {
    return this.html;
  }

  @Get('console/console.js')
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @Header('X-Content-Type-Options', 'nosniff')
  js(): string {
    return this.script;
  }

  /** Server-Sent Events: `event: decision` with the decision event as data, recent ones first. */
  @Get('console/decisions')
  async decisions(
    @Req() req: Request,
    @Res() res: Response,
    @Ip() ip: string,
    @Headers('authorization') authorization?: string,
  ): Promise<void> {
    const who = await this.readers.identify(
      { authorization, source: `http:${ip}` },
      { command: 'console.decisions', request: httpRequest('GET', '/console/decisions', undefined), body: undefined },
    );
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Connection', 'keep-alive');
    res.flushHeaders();
    // In order, one at a time: each decision needs the reader's view of its proposal, with the
    // grants and clearance they have when it is sent (a revocation or a deactivation applies to
    // an open stream at once, as to a new request).
    let chain = Promise.resolve();
    let ended = false;
    const send = (d: DecisionEvent) => {
      chain = chain
        .then(async () => {
          if (ended) return;
          const reader = await this.readers.current(who);
          if (!reader) return close();
          const shown = await this.forReader(d, reader);
          if (shown && !ended) res.write(`event: decision\ndata: ${JSON.stringify(shown)}\n\n`);
        })
        .catch(() => undefined);
    };
    const { recent, unsubscribe } = this.feed.subscribe(send);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    const close = () => {
      if (ended) return;
      ended = true;
      clearInterval(ping);
      unsubscribe();
      this.open.delete(res);
      res.end();
    };
    res.write(': connected\n\n');
    recent.forEach(send);
    this.open.add(res);
    req.on('close', close);
  }

  /** Ends the event streams so that the HTTP server can close (graceful drain). */
  onModuleDestroy(): void {
    for (const res of this.open) res.end();
    this.open.clear();
  }

  private async forReader(
    d: DecisionEvent,
    who: Identity,
  ): Promise<DecisionEvent | (DecisionEvent & { payload_withheld: true }) | undefined> {
    if (!this.policy.mayReadDomain(who, d.domain)) return undefined;
    if (await this.policy.mayReadPayload(d.proposal_id, who)) return d;
    return { ...d, payload_summary: '', payload_withheld: true };
  }
}
