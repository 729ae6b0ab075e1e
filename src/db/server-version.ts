/**
 * The oldest PostgreSQL Weir runs on. 15 for pg_stat_force_next_flush(),
 * which table maintenance (src/db/table-maintenance.ts) calls so a pass sees
 * its own node's writes; 15 is also the oldest version Weir's tests run on.
 * A fallback for older servers would be code no test exercises, so older
 * servers are refused at start-up with one line instead of failing an hour
 * later in a background loop.
 */
export const MIN_POSTGRES_VERSION_NUM = 150000;

/** undefined when supported; else the one-line reason, naming both versions. */
export function unsupportedPostgres(versionNum: number, version: string): string | undefined {
  if (versionNum >= MIN_POSTGRES_VERSION_NUM) return undefined;
  return `Weir needs PostgreSQL ${MIN_POSTGRES_VERSION_NUM / 10000} or newer; the server at DATABASE_URL runs PostgreSQL ${version.split(' ')[0]}`;
}

export class UnsupportedPostgresError extends Error {
  readonly code = 'WEIR_UNSUPPORTED_POSTGRES';
}
