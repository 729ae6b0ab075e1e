/**
 * A lease id made in SQL: the MD5 of a seed and the leased row's id, as a
 * uuid. Every claim that leases rows (the delivery claims, the hand-off in
 * the capture statement, the subscription event claim) makes its lease ids
 * with this one rule:
 * - the seed is new for every claim (a random UUID drawn in this process
 *   for each statement; the hand-off's is its node, for a delivery's first
 *   lease), so a row claimed again gets a new lease id, and a worker whose
 *   lease ran out cannot record over the next holder's;
 * - the row's id makes every row of one claim a lease id of its own, which
 *   releaseLeases and renewLeases need: they name leases one row at a time.
 * Not gen_random_uuid(): PGlite serves its random bytes by opening, reading
 * and closing /dev/urandom in its JavaScript file system for every call,
 * 25-30 µs of a claimed row's 150-180 on PGlite (docs/forwarding.md, "A
 * claim's lease id cost a sixth of a PGlite claim"). Lease ids never leave
 * the server.
 */
export function leaseIdSql(seed: string, rowId: string): string {
  return `md5(${seed}::text || ${rowId}::text)::uuid`;
}
