/**
 * Ordering of a process driver's work: per deployment, one piece at a time (in this process), and
 * background work tracked so shutdown can give it a moment.
 */
export class DeploymentWork {
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();

  /** Runs `work` after every earlier piece of work on the same deployment. */
  serialize<T>(deploymentId: string, work: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(deploymentId) ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(deploymentId, tail);
    void tail.then(() => {
      if (this.chains.get(deploymentId) === tail) this.chains.delete(deploymentId);
    });
    return run;
  }

  /**
   * Takes the deployment's turn and keeps it until the returned `done` is called; resolves once
   * the turn is ours (every earlier piece of work has finished).
   */
  async hold(deploymentId: string): Promise<() => void> {
    let done!: () => void;
    const released = new Promise<void>((resolve) => (done = resolve));
    let acquired!: () => void;
    const turn = new Promise<void>((resolve) => (acquired = resolve));
    void this.serialize(deploymentId, () => {
      acquired();
      return released;
    });
    await turn;
    return done;
  }

  track(work: () => Promise<void>): void {
    const running = work();
    this.background.add(running);
    void running.finally(() => this.background.delete(running));
  }

  /** Waits for background work, at most `ms`. */
  async settle(ms: number): Promise<void> {
    await Promise.race([Promise.allSettled([...this.background]), new Promise((r) => setTimeout(r, ms))]);
  }
}
