/**
 * How a queue worker's loop waits (src/delivery/worker.ts, and the event
 * worker in src/subscriptions/): until a deadline, unless woken first by a
 * NOTIFY, a finished send or shutdown. A wake that comes while the loop is
 * busy is remembered, so the next sleep returns at once instead of missing it.
 */
export class WakeableSleep {
  private flag = false;
  private resolveSleep: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private until: number | undefined;

  /** Whether a wake came since the last clear(). */
  get woken(): boolean {
    return this.flag;
  }

  /** Forgets earlier wakes: called as a loop pass starts, which sees everything they announced. */
  clear(): void {
    this.flag = false;
  }

  wake(): void {
    this.flag = true;
    const r = this.resolveSleep;
    this.resolveSleep = undefined;
    r?.();
  }

  /** Sleeps until the epoch ms `until`, or a wake. */
  sleep(until: number): Promise<void> {
    if (this.flag) return Promise.resolve();
    return new Promise((resolve) => {
      this.until = until;
      this.timer = setTimeout(() => this.wake(), Math.max(0, until - Date.now()));
      this.resolveSleep = () => {
        clearTimeout(this.timer);
        this.until = undefined;
        resolve();
      };
    });
  }

  /** Makes a sleep in progress end by `at`, if it would last longer. */
  wakeBy(at: number): void {
    if (this.until === undefined || at >= this.until) return;
    clearTimeout(this.timer);
    this.until = at;
    this.timer = setTimeout(() => this.wake(), Math.max(0, at - Date.now()));
  }
}

/**
 * Shutdown of a worker's sends: lets them finish for up to `graceMs`, then
 * aborts the rest and hands their leases to `release` (best effort: a lease
 * not released expires on its own).
 */
export async function drainInFlight<V extends { abort: AbortController; done: Promise<void> }>(
  inflight: Map<string, V>,
  graceMs: number,
  release: (left: V[]) => Promise<unknown>,
): Promise<void> {
  const all = () => Promise.all([...inflight.values()].map((f) => f.done));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([all(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
  clearTimeout(timer);
  const left = [...inflight.values()];
  if (left.length === 0) return;
  for (const f of left) f.abort.abort();
  await all();
  await release(left);
}
