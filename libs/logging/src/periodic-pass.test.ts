import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeriodicPass } from './periodic-pass.js';

/** A pass the test ends when it wants: `release()` resolves the oldest pass still running. */
function gatedPasses() {
  const gates: Array<() => void> = [];
  let started = 0;
  let active = 0;
  let most = 0;
  const run = async () => {
    started++;
    active++;
    most = Math.max(most, active);
    await new Promise<void>((r) => gates.push(r));
    active--;
    return started;
  };
  return {
    run,
    release: () => gates.shift()?.(),
    get started() {
      return started;
    },
    get most() {
      return most;
    },
  };
}

const ticks = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('PeriodicPass', () => {
  it('never overlaps: a trigger during a pass waits for it and starts none (no rerun)', async () => {
    const gated = gatedPasses();
    const loop = new PeriodicPass({ run: gated.run, onError: () => -1 });
    const first = loop.trigger();
    const second = loop.trigger();
    expect(second).toBe(first);
    expect(gated.started).toBe(1);
    gated.release();
    expect(await first).toBe(1);
    await ticks();
    expect(gated.started).toBe(1);
    // The pass over, a trigger starts a new one.
    const third = loop.trigger();
    gated.release();
    expect(await third).toBe(2);
    expect(gated.most).toBe(1);
  });

  it('with rerun, triggers during a pass run exactly one more pass after it, and the trigger settles after that one', async () => {
    const gated = gatedPasses();
    const loop = new PeriodicPass({ run: gated.run, onError: () => -1, rerun: true });
    const first = loop.trigger();
    const again = loop.trigger();
    loop.trigger();
    expect(gated.started).toBe(1);
    gated.release();
    await ticks();
    expect(gated.started).toBe(2);
    let settled = false;
    void again.then(() => (settled = true));
    await ticks();
    expect(settled).toBe(false);
    gated.release();
    expect(await again).toBe(2);
    expect(await first).toBe(2);
    await ticks();
    expect(gated.started).toBe(2);
    expect(gated.most).toBe(1);
  });

  it('reports a failed pass to onError and resolves with its answer; the next pass runs', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const loop = new PeriodicPass({
      run: async () => {
        if (++calls === 1) throw new Error('boom');
        return 'ok';
      },
      onError: (err) => {
        errors.push(err);
        return 'failed';
      },
    });
    expect(await loop.trigger()).toBe('failed');
    expect((errors[0] as Error).message).toBe('boom');
    expect(await loop.trigger()).toBe('ok');
  });

  it('reports a pass that throws before its first await the same way', async () => {
    const errors: unknown[] = [];
    const loop = new PeriodicPass<number>({
      run: () => {
        throw new Error('at once');
      },
      onError: (err) => (errors.push(err), 0),
    });
    expect(await loop.trigger()).toBe(0);
    expect(errors).toHaveLength(1);
  });

  it('runs a pass every interval, never into a failing timer, and not once stopped', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let runs = 0;
    const loop = new PeriodicPass({
      run: async () => {
        runs++;
        throw new Error('each time');
      },
      onError: (err) => void errors.push(err),
    });
    expect(loop.ticking).toBe(false);
    loop.every(1_000);
    expect(loop.ticking).toBe(true);
    await vi.advanceTimersByTimeAsync(3_500);
    expect(runs).toBe(3);
    expect(errors).toHaveLength(3);
    await loop.stop();
    expect(loop.ticking).toBe(false);
    expect(loop.stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toBe(3);
  });

  it('stop waits for the pass under way, and a rerun asked for is dropped', async () => {
    const gated = gatedPasses();
    const loop = new PeriodicPass({ run: gated.run, onError: () => -1, rerun: true });
    void loop.trigger();
    void loop.trigger();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await ticks();
    expect(stopped).toBe(false);
    gated.release();
    await stopping;
    expect(gated.started).toBe(1);
  });
});
