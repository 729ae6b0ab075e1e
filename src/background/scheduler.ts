/**
 * The one shape of Weir's background work (docs/architecture.md): a loop
 * runs `pass` every `everyMs`, and
 * - never overlaps a pass with the next: a pass slower than its interval
 *   delays the next one, and the passes it overran are skipped, not queued
 *   (so `stop()` waits for at most one pass);
 * - adds up to `jitterMs` to every wait, so nodes started together do not
 *   take their advisory locks in step;
 * - stops promptly: `stop()` cancels the wait, aborts the pass's signal (long
 *   passes check it between batches) and waits for that one pass; it is safe
 *   before `start()` and safe twice;
 * - reports each pass (duration, how late it started, whether it threw) to
 *   LoopMetrics, which the node exposes on /metrics.
 *
 * This module imports nothing of Weir's: every layer may use it.
 */

/** Per-loop observations; WeirMetrics implements it (weir_loop_* on /metrics). */
export interface LoopMetrics {
  pass(loop: string, report: { seconds: number; lagSeconds: number; failed: boolean }): void;
}

export interface LoopOptions<T> {
  /** A short fixed name (a metric label): `incidents`, `capture_retention`, ... never an id. */
  name: string;
  everyMs: number;
  /** Up to this much is added at random to every wait; default a tenth of everyMs, at most 1 s. */
  jitterMs?: number;
  /** Delay of the first pass after start(); default everyMs (plus jitter). */
  firstAfterMs?: number;
  /** One pass. `signal` aborts when the loop stops. */
  pass(signal: AbortSignal): Promise<T>;
  /** Told about a pass that threw (not called once stopping); the next pass runs as scheduled. */
  onError?(err: unknown): void;
  metrics?: LoopMetrics;
  /** Keep the process alive while waiting (default false: a loop never holds a process open). */
  ref?: boolean;
  /** The jitter's source of randomness (tests fix it); default Math.random. */
  random?: () => number;
}

export interface Loop<T> {
  readonly name: string;
  start(): void;
  /**
   * One pass now: waits for a pass in progress, then runs one (several
   * callers meanwhile share it). Resolves with its result, or undefined when
   * it threw or the loop is stopped.
   */
  runOnce(): Promise<T | undefined>;
  /** Cancels the wait, aborts the pass in progress and waits for it to end. */
  stop(): Promise<void>;
  /** Whether a pass is running now. */
  readonly busy: boolean;
  /** When the timer's next pass is due (epoch ms), undefined while none is scheduled. */
  readonly nextDueAt: number | undefined;
}

export function createLoop<T>(opts: LoopOptions<T>): Loop<T> {
  const jitterMs = Math.max(0, opts.jitterMs ?? Math.min(1_000, opts.everyMs / 10));
  const abort = new AbortController();
  let started = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** When the next pass is due (epoch ms): what its lag is measured from. */
  let dueAt: number | undefined;
  const random = opts.random ?? Math.random;
  let current: Promise<T | undefined> | undefined;
  let queued: Promise<T | undefined> | undefined;

  const jitter = () => (jitterMs > 0 ? random() * jitterMs : 0);

  const runPass = async (due: number): Promise<T | undefined> => {
    const began = performance.now();
    const lagSeconds = Math.max(0, Date.now() - due) / 1000;
    let failed = false;
    try {
      return await opts.pass(abort.signal);
    } catch (err) {
      failed = true;
      if (!stopped) opts.onError?.(err);
      return undefined;
    } finally {
      opts.metrics?.pass(opts.name, { seconds: (performance.now() - began) / 1000, lagSeconds, failed });
    }
  };

  /** Schedules the next pass at `at` (epoch ms; right away when that is past). */
  const arm = (at: number) => {
    if (stopped || !started) return;
    clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(onTimer, Math.max(0, at - Date.now()));
    if (!opts.ref) timer.unref();
  };

  const begin = (due: number): Promise<T | undefined> => {
    const startedAt = Date.now();
    const p = runPass(due).finally(() => {
      current = undefined;
      // The next pass is due one interval after this one started. A pass
      // that overran it starts at once, late (the lag metric shows by how
      // much), and the intervals it overran are not made up for.
      arm(startedAt + opts.everyMs + jitter());
    });
    current = p;
    return p;
  };

  function onTimer() {
    timer = undefined;
    const due = dueAt ?? Date.now();
    dueAt = undefined;
    if (stopped || current) return;
    void begin(due);
  }

  return {
    name: opts.name,
    get busy() {
      return current !== undefined;
    },
    get nextDueAt() {
      return dueAt;
    },
    start() {
      if (started || stopped) return;
      started = true;
      arm(Date.now() + (opts.firstAfterMs ?? opts.everyMs) + jitter());
    },
    runOnce() {
      if (stopped) return Promise.resolve(undefined);
      if (!current) {
        clearTimeout(timer);
        dueAt = undefined;
        return begin(Date.now());
      }
      queued ??= current.then(() => {
        queued = undefined;
        if (stopped) return undefined;
        clearTimeout(timer);
        dueAt = undefined;
        // a pass the timer started meanwhile runs first
        return (current ?? Promise.resolve()).then(() => (stopped ? undefined : begin(Date.now())));
      });
      return queued;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      dueAt = undefined;
      abort.abort();
      await current;
      await queued;
    },
  };
}

/** Stops several loops at once (each waits only for its own pass). */
export async function stopLoops(loops: Iterable<Loop<unknown> | undefined>): Promise<void> {
  await Promise.all([...loops].map((l) => l?.stop()));
}
