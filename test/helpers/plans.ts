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
