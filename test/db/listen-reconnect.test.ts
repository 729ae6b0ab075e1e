import assert from 'node:assert/strict';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { Authenticator } from '../../src/auth/authenticate.ts';
import { notify } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { LISTENER_APPLICATION_NAME, openPostgres } from '../../src/db/postgres.ts';
import type { Db } from '../../src/db/db.ts';
import { seedOrg } from '../helpers/app.ts';
import { createFreshDatabase, onPostgres } from '../helpers/db.ts';

// PostgreSQL's LISTEN connection can drop (server restart, failover, an
// administrator's pg_terminate_backend). PGlite's LISTEN is in-process and
// never drops, so this file runs on PostgreSQL only.

const skip = !onPostgres && 'PostgreSQL only';
let fresh: { url: string; drop(): Promise<void> };
let db: Db;

before(async () => {
  if (skip) return;
  fresh = await createFreshDatabase();
  db = await openPostgres(fresh.url, { poolSize: 3 });
  await migrate(db);
});

after(async () => {
  if (skip) return;
  await db.close();
  await fresh.drop();
});

/** Kills this database's LISTEN backend as an administrator would. */
async function killListener(): Promise<void> {
  const admin = new pg.Client({ connectionString: fresh.url });
  await admin.connect();
  try {
    const { rowCount } = await admin.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = $1',
      [LISTENER_APPLICATION_NAME],
    );
    assert.equal(rowCount, 1, 'one LISTEN connection per Db');
  } finally {
    await admin.end();
  }
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('the LISTEN connection', { skip }, () => {
  it('reconnects after being killed, tells subscribers, and delivers again', async () => {
    const got: string[] = [];
    let reconnects = 0;
    const unlisten = await db.listen('reconnect_test', (p) => got.push(p), () => reconnects++);
    try {
      await notify(db, 'reconnect_test', 'before');
      await until(() => got.includes('before'));
      await killListener();
      await until(() => reconnects === 1);
      assert.equal(db.listening(), true);
      await notify(db, 'reconnect_test', 'after');
      await until(() => got.includes('after'));
    } finally {
      await unlisten();
    }
  });

  it('makes the authenticator drop its cache on reconnection: a change nobody heard of is seen', async () => {
    const auth = new Authenticator(db);
    await auth.start();
    let reconnects = 0;
    const unlisten = await db.listen('reconnect_counter', () => {}, () => reconnects++);
    try {
      const { key, keyId } = await seedOrg(db);
      assert.ok(await auth.authenticate(`Bearer ${key}`));
      await killListener();
      // Revoked without a NOTIFY, as if the notification were lost while the connection was down.
      await db.query('update api_keys set revoked_at = now() where id = $1', [keyId]);
      await until(() => reconnects === 1);
      assert.equal(await auth.authenticate(`Bearer ${key}`), null);
    } finally {
      await unlisten();
      await auth.stop();
    }
  });
});
