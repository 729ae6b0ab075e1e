import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { PGlite } from '@electric-sql/pglite';

export interface CheckpointOptions {
  /** Checkpoint once this much WAL was written since the last one (PostgreSQL's max_wal_size, roughly). */
  walBytes?: number;
  /** Checkpoint after this long when anything at all was written (PostgreSQL's checkpoint_timeout). */
  intervalMs?: number;
  /** How often the WAL written since the last checkpoint is looked at. */
  checkEveryMs?: number;
  /** Told about a failed checkpoint; the next check tries again. */
  onError?: (err: unknown) => void;
  /** Told after each check: when it started (epoch ms) and whether it checkpointed (tests observe the checker through it). */
  onCheck?: (check: { startedAt: number; checkpointed: boolean; checkpointMs?: number }) => void;
  loopMetrics?: LoopMetrics;
  /** False when the folder must not be written any more (its lock was lost): no checkpoint runs then. */
  writable?: () => boolean;
}

export interface Checkpoints {
  /** Stops checking and waits for a checkpoint in progress. */
  stop(): Promise<void>;
}

const WAL_BYTES = 512 * 1024 * 1024;
const INTERVAL_MS = 5 * 60_000;
const CHECK_EVERY_MS = 1_000;

/**
 * PGlite runs PostgreSQL as a single-user backend, and a single-user backend
 * has no checkpointer: nothing ever checkpoints on its own. Without this,
 * pg_wal grows by every byte ever written (about 2 KiB per capture, on disk
 * or, for an in-memory database, in memory), crash recovery replays all of
 * it, and every new 16 MiB WAL segment is created and zero-filled on the
 * event loop, which stalls captures for 5-8 ms each time.
 *
 * So this does what PostgreSQL's checkpointer would: a CHECKPOINT once
 * `walBytes` of WAL were written since the last one, or after `intervalMs`
 * when anything was written. After a checkpoint PostgreSQL keeps the old
 * segments as future ones (wal_recycle), so pg_wal stays bounded and new
 * segments are renamed, not created and zero-filled. PGlite runs with fsync
 * off, so a checkpoint is the write of the dirty shared buffers (at most
 * shared_buffers, 128 MiB): under full load about a tenth of a second every
 * `walBytes` (83 ms measured), against a 16 MiB zero-fill every ~8k captures
 * without it.
 */
export function startCheckpoints(pg: PGlite, opts: CheckpointOptions = {}): Checkpoints {
  const walBytes = opts.walBytes ?? WAL_BYTES;
  const intervalMs = opts.intervalMs ?? INTERVAL_MS;
  let last = Date.now();
  /** The insert position right after our last checkpoint: nothing written since when it has not moved. */
  let quietAt: string | undefined;
  let stopped = false;

  const check = async () => {
    const startedAt = Date.now();
    const { rows } = await pg.query<{ written: number; insert: string }>(
      'select (pg_current_wal_insert_lsn() - redo_lsn)::float8 as written, pg_current_wal_insert_lsn()::text as insert from pg_control_checkpoint()',
    );
    const { written, insert } = rows[0];
    const due = written >= walBytes || (Date.now() - last >= intervalMs && insert !== quietAt);
    if (!due || stopped) return opts.onCheck?.({ startedAt, checkpointed: false });
    const begun = performance.now();
    await pg.exec('checkpoint');
    const checkpointMs = performance.now() - begun;
    last = Date.now();
    quietAt = (await pg.query<{ insert: string }>('select pg_current_wal_insert_lsn()::text as insert')).rows[0].insert;
    opts.onCheck?.({ startedAt, checkpointed: true, checkpointMs });
  };

  const loop = createLoop({
    name: 'pglite_checkpoint',
    everyMs: opts.checkEveryMs ?? CHECK_EVERY_MS,
    metrics: opts.loopMetrics,
    onError: (err) => {
      if (!pg.closed) opts.onError?.(err);
    },
    pass: async () => {
      if (stopped || pg.closed || opts.writable?.() === false) return;
      await check();
    },
  });
  loop.start();

  return {
    async stop() {
      stopped = true;
      await loop.stop();
    },
  };
}
