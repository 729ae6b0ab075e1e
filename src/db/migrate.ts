import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; every Weir node must use the same one.
const MIGRATION_LOCK_KEY = 7_420_913_001;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** Numbered forward-only migrations: `0001_init.sql`, `0002_...sql`. */
export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ id: Number(f.slice(0, 4)), name: f, sql: readFileSync(dir + f, 'utf8') }));
  // Two files with one number (branches merged side by side) would have the
  // second silently skipped as "already applied": refuse to start instead.
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i].id === migrations[i - 1].id) {
      throw new Error(`migrations ${migrations[i - 1].name} and ${migrations[i].name} share the number ${migrations[i].id}; renumber one`);
    }
  }
  return migrations;
}

/**
 * Applies pending migrations, each in its own transaction. A transaction-level
 * advisory lock serialises nodes that start at the same moment: the second
 * waits, then sees the first one's rows in weir_migrations and skips them.
 * The bookkeeping table is created under the same lock, since two concurrent
 * `create table if not exists` can still collide in the catalog.
 */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<string[]> {
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.exec(`create table if not exists weir_migrations (
      id integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`);
  });
  const applied: string[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const { rows } = await tx.query('select 1 from weir_migrations where id = $1', [m.id]);
      if (rows.length > 0) return false;
      await tx.exec(m.sql);
      await tx.query('insert into weir_migrations (id, name) values ($1, $2)', [m.id, m.name]);
      return true;
    });
    if (done) applied.push(m.name);
  }
  return applied;
}
