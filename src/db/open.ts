import type { LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import { lockDataDir } from './data-dir-lock.ts';
import type { Db } from './db.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

/** PostgreSQL when DATABASE_URL is set, else PGlite in WEIR_DATA_DIR (one process per folder, enforced by an owner record: src/db/data-dir-lock.ts). */
export async function openDb(config: Config, log: (msg: string, err?: unknown) => void, hooks: { onCheckpoint?: (seconds: number) => void; loopMetrics?: LoopMetrics } = {}): Promise<Db> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, { poolSize: config.dbPoolSize, log });
  const lock = await lockDataDir(config.dataDir, { onLost: (msg) => log(msg), onTakeover: (msg) => log(msg) });
  const release = () => lock.release();
  try {
    const db = await openPglite(config.dataDir, {
      fsync: config.pgliteFsync,
      checkpoints: {
        onError: (err) => log('PGlite checkpoint failed; retrying', err),
        onCheck: (c) => c.checkpointMs !== undefined && hooks.onCheckpoint?.(c.checkpointMs / 1000),
        loopMetrics: hooks.loopMetrics,
      },
    });
    const close = db.close;
    return {
      ...db,
      async close() {
        await close();
        release();
      },
    };
  } catch (err) {
    release();
    throw err;
  }
}
