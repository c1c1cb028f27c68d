export interface PeriodicPassOptions<T> {
  /** One pass. */
  run: () => Promise<T>;
  /** Told of a pass that threw or rejected (never rethrown, so never into the timer); what it returns is that pass's result. */
  onError: (err: unknown) => T;
  /**
   * What a trigger during a pass does: with `rerun`, one more pass runs once the current one ends
   * (however many triggers came) and the trigger's promise settles after it; without, the
   * trigger just waits for the pass under way.
   */
  rerun?: boolean;
}

/**
 * A pass run now and then (a timer, a caller's trigger) that never overlaps itself: at most one
 * pass runs at a time, and `stop()` ends the timer and waits for the pass under way.
 */
export class PeriodicPass<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | null = null;
  private again = false;
  private halted = false;

  constructor(private readonly options: PeriodicPassOptions<T>) {}

  /** Whether the timer runs (`every` was called and `stop` was not since). */
  get ticking(): boolean {
    return this.timer !== undefined;
  }

  /** Whether `stop` was called. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Triggers a pass every `everyMs` (a timer that keeps no process alive). */
  every(everyMs: number): void {
    this.timer = setInterval(() => void this.trigger(), everyMs);
    this.timer.unref();
  }

  /** Runs a pass now, or joins the one under way (see `rerun`); resolves with the last pass's result. */
  trigger(): Promise<T> {
    if (this.running) {
      if (this.options.rerun) this.again = true;
      return this.running;
    }
    this.running = this.passes().finally(() => (this.running = null));
    return this.running;
  }

  /** Ends the timer and waits for the pass under way; a rerun asked for is not run. */
  async stop(): Promise<void> {
    this.halted = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async passes(): Promise<T> {
    let result: T;
    do {
      this.again = false;
      try {
        result = await this.options.run();
      } catch (err) {
        result = this.options.onError(err);
      }
    } while (this.again && !this.halted);
    return result;
  }
}
