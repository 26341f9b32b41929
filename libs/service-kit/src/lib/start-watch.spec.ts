import { Readiness } from './readiness';
import { StartProgress, watchStart } from './start-watch';

describe('the start watch: a start that catches up makes progress, one that is stuck is ended', () => {
  let written: string[];
  let spy: jest.SpyInstance;

  beforeEach(() => {
    jest.useFakeTimers();
    written = [];
    spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    spy.mockRestore();
    jest.useRealTimers();
  });

  const fatalLines = () =>
    written.map((l) => JSON.parse(l) as { level: string; msg: string; waiting_for: string[]; events_handled: number });

  it('given a reactor that handles no event, when the stall limit passes, then the fatal line names the checks still failing', () => {
    const readiness = new Readiness();
    readiness.register('nats', () => true);
    readiness.register('reactor:sweeper', () => false);
    readiness.register('proposal-cache', () => false);
    watchStart(new StartProgress(), readiness, { service: 'sweeper', stallMs: 5_000, exitOnFatal: false, sampleMs: 100 });

    jest.advanceTimersByTime(4_900);
    expect(written).toHaveLength(0);
    jest.advanceTimersByTime(300);

    expect(fatalLines()).toEqual([
      expect.objectContaining({
        level: 'fatal',
        waiting_for: ['reactor:sweeper', 'proposal-cache'],
        events_handled: 0,
        msg: expect.stringContaining('no progress for 5000 ms (waiting for: reactor:sweeper, proposal-cache)'),
      }),
    ]);
    // Said once, not at every sample.
    jest.advanceTimersByTime(10_000);
    expect(written).toHaveLength(1);
  });

  it('given a long catch-up that keeps handling events, when it lasts many stall limits, then nothing is said', () => {
    const progress = new StartProgress();
    const readiness = new Readiness();
    readiness.register('reactor:resolver', () => false);
    watchStart(progress, readiness, { service: 'resolver', stallMs: 2_000, exitOnFatal: false, sampleMs: 100 });

    for (let i = 0; i < 100; i++) {
      progress.tick();
      jest.advanceTimersByTime(1_000);
    }
    expect(written).toHaveLength(0);

    // Then it stops handling events: stuck.
    jest.advanceTimersByTime(2_200);
    expect(fatalLines()).toEqual([expect.objectContaining({ waiting_for: ['reactor:resolver'], events_handled: 100 })]);
  });

  it('given a start that ended, when time passes, then the watch says nothing', () => {
    const end = watchStart(new StartProgress(), new Readiness(), { service: 'audit', stallMs: 1_000, exitOnFatal: false, sampleMs: 100 });
    end();
    jest.advanceTimersByTime(10_000);
    expect(written).toHaveLength(0);
  });
});
