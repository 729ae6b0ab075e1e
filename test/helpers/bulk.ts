import type { Db } from '../../src/db/db.ts';

/**
 * `n` captures of an endpoint straight from generate_series (the capture
 * statement would take minutes for 100,000): one a millisecond from
 * `startMs`, with UUIDv7 ids of that millisecond, a 1 KiB body, and the
 * statistics counters flushed at commit so the next look at
 * pg_stat_user_tables (from any connection) sees them.
 */
export async function bulkCaptures(db: Db, e: { id: string; organization_id: string }, n: number, startMs: number, offset = 0): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(
      `insert into captured_requests (id, organization_id, endpoint_id, received_at, method, path, query, headers, body, body_size, content_type)
       select (lpad(to_hex($3::bigint + g), 12, '0') || '70008000' || lpad(to_hex(g), 12, '0'))::uuid, $1::uuid, $2::uuid,
              timestamptz 'epoch' + ($3::bigint + g) * interval '1 millisecond', 'POST', '', '',
              '[["Content-Type","application/json"]]', convert_to(repeat('x', 1024), 'UTF8'), 1024, 'application/json'
         from generate_series($4::bigint, $4::bigint + $5::bigint - 1) g`,
      [e.organization_id, e.id, startMs, offset, n],
    );
    await tx.query('select pg_stat_force_next_flush()');
  });
}

/** `n` pending https deliveries of an endpoint (to made-up captures), counters flushed at commit. */
export async function bulkDeliveries(db: Db, e: { id: string; organization_id: string }, n: number): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url)
       select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'https', 'https://example.com/hook'
         from generate_series(1, $3::int)`,
      [e.organization_id, e.id, n],
    );
    await tx.query('select pg_stat_force_next_flush()');
  });
}

/** Runs one statement with the counters flushed at its commit. */
export async function flushed(db: Db, sql: string, params: unknown[] = []): Promise<number> {
  return db.transaction(async (tx) => {
    const { rowCount } = await tx.query(sql, params);
    await tx.query('select pg_stat_force_next_flush()');
    return rowCount;
  });
}
