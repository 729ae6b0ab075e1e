import type { LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import { lockDataDir } from './data-dir-lock.ts';
import type { Db, Queryable } from './db.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export interface OpenHooks {
  onCheckpoint?: (seconds: number) => void;
  loopMetrics?: LoopMetrics;
  /**
   * Told once when another process took the PGlite folder over (see
   * src/db/data-dir-lock.ts). Every query of this Db fails from then on;
   * the caller must end the process (the server does, exit code 1).
   */
  onLockLost?: (msg: string) => void;
  /** The lock's heartbeat period (tests). */
  lockHeartbeatMs?: number;
}

/** Thrown by every query of a PGlite Db whose folder another process took over. */
export class DataDirLockLostError extends Error {
  readonly code = 'WEIR_LOCK_LOST';
}

/** PostgreSQL when DATABASE_URL is set, else PGlite in WEIR_DATA_DIR (one process per folder, enforced by an owner record: src/db/data-dir-lock.ts). */
export async function openDb(config: Config, log: (msg: string, err?: unknown) => void, hooks: OpenHooks = {}): Promise<Db> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, { poolSize: config.dbPoolSize, log });
  let lostWhy: string | undefined;
  const lock = await lockDataDir(config.dataDir, {
    heartbeatMs: hooks.lockHeartbeatMs,
    onLost: (msg) => {
      lostWhy = msg;
      if (hooks.onLockLost) hooks.onLockLost(msg);
      else log(msg);
    },
    onRestored: (msg) => log(msg),
    onTakeover: (msg) => log(msg),
  });
  const release = () => lock.release();
  try {
    const db = await openPglite(config.dataDir, {
      fsync: config.pgliteFsync,
      checkpoints: {
        onError: (err) => log('PGlite checkpoint failed; retrying', err),
        onCheck: (c) => c.checkpointMs !== undefined && hooks.onCheckpoint?.(c.checkpointMs / 1000),
        loopMetrics: hooks.loopMetrics,
        // a checkpoint writes the data files: never once the folder is another process's
        writable: () => !lock.lost,
      },
    });
    return fence(db, () => lostWhy, release);
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * The PGlite Db behind the data-directory lock: once the lock is lost every
 * statement (inside a transaction too) fails before it reaches the database,
 * and close() leaves the folder alone (PGlite's close writes a shutdown
 * checkpoint into files that are now another process's).
 */
function fence(db: Db, lost: () => string | undefined, release: () => void): Db {
  // one function call per statement while the lock holds: the capture path goes through here
  const refused = () => {
    const why = lost();
    return why === undefined ? undefined : Promise.reject(new DataDirLockLostError(why));
  };
  const guard = (q: Queryable): Queryable => ({
    query: (text, params, opts) => refused() ?? q.query(text, params, opts),
    exec: (sql) => refused() ?? q.exec(sql),
  });
  return {
    ...db,
    ...guard(db),
    transaction: (fn, opts) => refused() ?? db.transaction((tx) => fn(guard(tx)), opts),
    withSettings: (settings, fn) => refused() ?? db.withSettings(settings, (q) => fn(guard(q))),
    session: (fn) => refused() ?? db.session((conn) => fn(guard(conn))),
    async close() {
      if (!lost()) await db.close();
      release();
    },
  };
}
