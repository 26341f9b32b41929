import { Controller, Get, Header, OnModuleDestroy, Redirect, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DecisionFeed } from './decision-feed';

/** Where the console's static files are: beside the bundle (dist) or in the sources (tests, dev). */
function consoleDir(): string {
  const candidates = [join(__dirname, 'console'), join(__dirname, '..', 'console'), join(process.cwd(), 'apps/escalation/src/console')];
  const found = candidates.find((d) => existsSync(join(d, 'index.html')));
  if (!found) throw new Error(`console files not found in ${candidates.join(', ')}`);
  return found;
}

/**
 * The web console (issue 5 item 6): plain HTML and one small vanilla script, no build step.
 * It uses the HTTP API for the inbox and the resolution, and this Server-Sent Events stream for
 * the live decisions.
 */
@Controller()
export class ConsoleController implements OnModuleDestroy {
  private readonly html: string;
  private readonly script: string;
  private readonly open = new Set<Response>();

  constructor(private readonly feed: DecisionFeed) {
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
  page(): string {
    return this.html;
  }

  @Get('console/console.js')
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  js(): string {
    return this.script;
  }

  /** Server-Sent Events: `event: decision` with the decision event as data, recent ones first. */
  @Get('console/decisions')
  decisions(@Req() req: Request, @Res() res: Response): void {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Connection', 'keep-alive');
    res.flushHeaders();
    const send = (d: unknown) => res.write(`event: decision\ndata: ${JSON.stringify(d)}\n\n`);
    const { recent, unsubscribe } = this.feed.subscribe(send);
    res.write(': connected\n\n');
    recent.forEach(send);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    this.open.add(res);
    req.on('close', () => {
      clearInterval(ping);
      unsubscribe();
      this.open.delete(res);
    });
  }

  /** Ends the event streams so that the HTTP server can close (graceful drain). */
  onModuleDestroy(): void {
    for (const res of this.open) res.end();
    this.open.clear();
  }
}
