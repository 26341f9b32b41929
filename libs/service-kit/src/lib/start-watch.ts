import { Injectable } from '@nestjs/common';
import { Readiness } from './readiness';

/**
 * Events handled by the service's reactors and outboxes: what a start that is catching up shows
 * as progress. A catch-up may rightly take long on a big log; one that handles nothing for long
 * is stuck.
 */
@Injectable()
export class StartProgress {
  events = 0;

  tick(): void {
    this.events++;
  }
}

export interface StartWatchOptions {
  /** Service name, for the fatal line. */
  readonly service: string;
  /** No event handled for this long while starting: stuck. */
  readonly stallMs: number;
  readonly exitOnFatal: boolean;
  /** How often progress is sampled (tests shorten it). */
  readonly sampleMs?: number;
}

/**
 * Watches a start that runs the bootstrap hooks (catch-up of reactors, caches and outboxes) and
 * exits 70 when it makes no progress for `stallMs`: a hook waiting on something that never comes
 * leaves the process unready for ever, where a restart gets it going. The fatal line names the
 * readiness checks still failing, i.e. which part never caught up. Returns the function that
 * ends the watch.
 */
export function watchStart(progress: StartProgress, readiness: Readiness, options: StartWatchOptions): () => void {
  let seen = progress.events;
  let quietSince = Date.now();
  const timer = setInterval(() => {
    if (progress.events !== seen) {
      seen = progress.events;
      quietSince = Date.now();
      return;
    }
    if (Date.now() - quietSince < options.stallMs) return;
    clearInterval(timer);
    const waiting = Object.entries(readiness.report().checks)
      .filter(([, ok]) => !ok)
      .map(([name]) => name);
    const line = {
      level: 'fatal',
      time: new Date().toISOString(),
      service: options.service,
      context: 'Bootstrap',
      waiting_for: waiting,
      events_handled: progress.events,
      msg:
        `the start made no progress for ${options.stallMs} ms (waiting for: ${waiting.join(', ') || 'nothing registered'})` +
        (options.exitOnFatal ? ': exiting to be restarted' : ''),
    };
    process.stderr.write(`${JSON.stringify(line)}\n`);
    if (!options.exitOnFatal) return;
    try {
      process.report?.writeReport();
    } catch {
      // best effort
    }
    process.exit(70);
  }, options.sampleMs ?? 1_000);
  // The watch never keeps a process alive by itself.
  timer.unref();
  return () => clearInterval(timer);
}
