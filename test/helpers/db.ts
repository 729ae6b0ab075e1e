import pg from 'pg';
import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { listPartitions } from '../../src/requests/partitions.ts';

export interface TestDb {
  db: Db;
  /** Connection string of the fresh PostgreSQL database (undefined on PGlite). */
  url: string | undefined;
  /** Empties every table, keeping the schema: call between tests. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export const onPostgres = Boolean(process.env.DATABASE_URL);

/** Replaces the database name in a connection string. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

/** A fresh PostgreSQL database beside `base` (default DATABASE_URL), dropped on cleanup; LISTEN/NOTIFY is per database, so test files cannot hear each other. */
export async function createFreshDatabase(base = process.env.DATABASE_URL): Promise<{ url: string; drop(): Promise<void> }> {
  if (!base) throw new Error('DATABASE_URL is not set');
  const name = `weir_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    url: withDatabase(base, name),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/**
 * One migrated database per test file: a fresh PostgreSQL database when
 * DATABASE_URL is set, else an in-memory PGlite (about 3 s to start, so share
 * it across the file and reset() between tests).
 */
export async function openTestDb(): Promise<TestDb> {
  let db: Db;
  let url: string | undefined;
  let drop = async () => {};
  if (onPostgres) {
    const fresh = await createFreshDatabase();
    url = fresh.url;
    drop = fresh.drop;
    db = await openPostgres(url, { poolSize: 5 });
  } else {
    db = await openPglite();
  }
  await migrate(db);
  return {
    db,
    url,
    async reset() {
      const { rows } = await db.query<{ tablename: string }>(
        `select tablename from pg_tables where schemaname = current_schema() and tablename <> 'weir_migrations'`,
      );
      if (rows.length > 0) await db.exec(`truncate ${rows.map((r) => `"${r.tablename}"`).join(', ')} cascade`);
    },
    async close() {
      await db.close();
      await drop();
    },
  };
}

/** reset() and then drop the day partitions of captured_requests, which reset() keeps: a clean slate for partition tests. */
export async function resetWithoutPartitions(t: TestDb): Promise<void> {
  await t.reset();
  for (const p of await listPartitions(t.db)) await t.db.exec(`drop table ${p.name}`);
}
