import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openPostgres } from '../../src/db/postgres.ts';
import { MIN_POSTGRES_VERSION_NUM, unsupportedPostgres } from '../../src/db/server-version.ts';

describe('PostgreSQL server version', () => {
  it('refuses a server older than 15 with one line naming the version needed and the version found', () => {
    const why = unsupportedPostgres(140012, '14.12 (Debian 14.12-1.pgdg120+1)');
    assert.equal(why, 'Weir needs PostgreSQL 15 or newer; the server at DATABASE_URL runs PostgreSQL 14.12');
    assert.ok(!why!.includes('\n'));
    assert.match(unsupportedPostgres(130000, '13.0')!, /needs PostgreSQL 15 or newer; .* runs PostgreSQL 13\.0$/);
  });

  it('accepts 15 and newer', () => {
    assert.equal(unsupportedPostgres(MIN_POSTGRES_VERSION_NUM, '15.0'), undefined);
    assert.equal(unsupportedPostgres(150020, '15.20 (Debian 15.20-0+deb12u1)'), undefined);
    assert.equal(unsupportedPostgres(170004, '17.4'), undefined);
  });

  it('opens the PostgreSQL server of this machine, which is new enough', { skip: !process.env.DATABASE_URL && 'PostgreSQL only' }, async () => {
    const db = await openPostgres(process.env.DATABASE_URL!);
    try {
      const { rows } = await db.query<{ num: number }>(`select current_setting('server_version_num')::int as num`);
      assert.ok(rows[0].num >= MIN_POSTGRES_VERSION_NUM);
    } finally {
      await db.close();
    }
  });
});
