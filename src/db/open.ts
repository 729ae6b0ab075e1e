import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import type { Db } from './db.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

/** PostgreSQL when DATABASE_URL is set, else PGlite in WEIR_DATA_DIR (one process per folder, enforced by a pid lock file). */
export async function openDb(config: Config, log: (msg: string, err?: unknown) => void): Promise<Db> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, { poolSize: config.dbPoolSize, log });
  const release = lockDataDir(config.dataDir);
  try {
    const db = await openPglite(config.dataDir, { fsync: config.pgliteFsync, checkpoints: { onError: (err) => log('PGlite checkpoint failed; retrying', err) } });
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite is a single-process database: two Weir processes on one folder
 * would corrupt it. A lock file holding the owner's pid refuses the second;
 * a lock left by a crashed process (pid gone) is taken over.
 */
function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'weir.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
        throw new Error(`WEIR_DATA_DIR ${dir} is in use by another Weir process (pid ${owner}); the embedded database allows one process. Use DATABASE_URL to run several nodes.`);
      }
      rmSync(path, { force: true });
    }
  }
  throw new Error(`cannot lock WEIR_DATA_DIR ${dir}`);
}
