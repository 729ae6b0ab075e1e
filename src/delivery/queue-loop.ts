import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import { drainInFlight, WakeableSleep } from './wake-sleep.ts';

export interface QueueLoopOptions {
  db: Db;
  logger: Logger;
  /** Safety poll: re-scan and recover expired leases this often, whatever NOTIFY says. */
  pollMs: number;
  /** The NOTIFY channel that announces new work; null to poll alone. */
  channel: string | null;
  /** Log lines: leases recovered, and a failed pass. */
  messages: { requeued: string; passFailed: string };
  /** Called each time the loop goes to sleep, with the epoch ms it sleeps until unless woken. */
  onIdle?: (until: number) => void;
}

/**
 * The loop both queue workers run (forwards: src/delivery/worker.ts; events:
 * src/subscriptions/event-worker.ts): recover expired leases every poll,
 * run a claim pass, sleep until a NOTIFY, a wake (a finished send) or the
 * time the pass asks for; after the listen connection is re-established,
 * scan again, because notifications sent meanwhile are lost. Shutdown lets
 * sends finish for a grace period, then aborts them and gives their leases back.
 */
export abstract class QueueLoop<V extends { abort: AbortController; done: Promise<void> }> {
  protected readonly inflight = new Map<string, V>();
  protected running = false;
  protected readonly sleeper = new WakeableSleep();
  private loop: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private lastRecovery = 0;

  constructor(private readonly loopOptions: QueueLoopOptions) {}

  get inFlight(): number {
    return this.inflight.size;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { db, channel } = this.loopOptions;
    if (channel) this.unlisten = await db.listen(channel, () => this.wake(), () => this.wake());
    this.loop = this.run();
  }

  /** Wakes the loop now (new work, a free slot, a re-established listen). */
  wake(): void {
    this.sleeper.wake();
  }

  /** Puts work whose lease expired back in the queue; returns how much. */
  protected abstract recoverLeases(): Promise<number>;

  /** One claim pass: the epoch ms to sleep until (at most `until`), or null to pass again at once. */
  protected abstract pass(until: number): Promise<number | null>;

  private async run(): Promise<void> {
    const { pollMs, logger, messages } = this.loopOptions;
    while (this.running) {
      this.sleeper.clear();
      let sleepUntil = Date.now() + pollMs;
      try {
        if (Date.now() - this.lastRecovery >= pollMs) {
          this.lastRecovery = Date.now();
          const n = await this.recoverLeases();
          if (n > 0) logger.warn({ count: n }, messages.requeued);
        }
        const next = await this.pass(sleepUntil);
        if (next === null) continue;
        sleepUntil = next;
      } catch (err) {
        if (!this.running) break;
        logger.error({ err }, messages.passFailed);
        sleepUntil = Date.now() + Math.min(1000, pollMs);
      }
      if (!this.running) break;
      if (!this.sleeper.woken) this.loopOptions.onIdle?.(sleepUntil);
      await this.sleeper.sleep(sleepUntil);
    }
  }

  /**
   * Stops claiming, lets sends in flight finish for up to `graceMs`, then
   * aborts the rest and hands them to `release` (their leases go back so
   * another node sends them at once). False when it was not running.
   */
  protected async stopLoop(graceMs: number, release: (left: V[]) => Promise<unknown>): Promise<boolean> {
    if (!this.running) return false;
    this.running = false;
    this.wake();
    await this.unlisten?.().catch(() => {});
    await this.loop;
    await drainInFlight(this.inflight, graceMs, release);
    return true;
  }
}
