import assert from 'node:assert/strict';
import { NAMED_PLAN_CACHE_MODE, setStatements, type Db, type Settings } from '../../src/db/db.ts';

/**
 * The plan a named statement keeps (QueryOptions.name, src/db/db.ts): made
 * once, without its values, under `settings` (as the caller runs it: the
 * claim's CLAIM_SETTINGS, the completion's). EXPLAIN EXECUTE takes no
 * parameters, and a generic plan is the same whatever they are, so each is
 * given as null. On one connection: a statement is prepared on the
 * connection that prepares it.
 */
export function genericPlanOf(db: Db, sql: string, params: number, settings: Settings = {}): Promise<string> {
  const prepared = `weir_generic_plan_test_${params}`;
  return db.session(async (conn) => {
    try {
      // the mode every connection already has, set again so the plan is generic whatever the session did
      await conn.exec(`${setStatements({ ...settings, plan_cache_mode: NAMED_PLAN_CACHE_MODE }, true)}; prepare ${prepared} as ${sql}`);
      const nulls = Array.from({ length: params }, () => 'null').join(', ');
      const { rows } = await conn.query<{ 'QUERY PLAN': string }>(`explain (costs off) execute ${prepared}(${nulls})`);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      // the settings back to the session's defaults; plan_cache_mode stays as the adapter opened it
      const reset = Object.keys(settings).map((name) => `; reset ${name}`).join('');
      await conn.exec(`deallocate ${prepared}${reset}`).catch(() => {});
    }
  });
}

/**
 * The settings of the SQL functions that walk the queue's indexes whatever
 * the statistics say (the hand-off's probe, migration 0024; the wake-up
 * questions, migration 0025): a plan kept per connection, made while the
 * queue was analyzed small, must not read the table whole later.
 */
export const INDEX_WALK_SETTINGS: Settings = { enable_seqscan: 'off', enable_bitmapscan: 'off' };

/**
 * Asserts that the SQL function `name` runs under INDEX_WALK_SETTINGS and
 * that its body holds `query` (whitespace aside), so a plan of `query` under
 * those settings (genericPlanOf) is the plan the function runs.
 */
export async function assertIndexWalkFunction(db: Db, name: string, query: string): Promise<void> {
  const { rows } = await db.query<{ body: string; config: string[] | null }>('select prosrc as body, proconfig as config from pg_proc where proname = $1', [name]);
  assert.equal(rows.length, 1, `one function ${name}`);
  assert.deepEqual(rows[0].config, Object.entries(INDEX_WALK_SETTINGS).map(([setting, value]) => `${setting}=${value}`), name);
  const flat = (sql: string) => sql.replace(/\s+/g, ' ').trim();
  assert.ok(flat(rows[0].body).includes(flat(query)), `${name}: ${rows[0].body}`);
}
