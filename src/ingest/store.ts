import { int4Array, timestamptzArray, uuidArray } from '../db/binary-arrays.ts';
import type { Queryable } from '../db/db.ts';
import { DELIVERY_CHANNEL } from '../delivery/enqueue.ts';
import { CAPTURES_CHANNEL } from '../subscriptions/emit.ts';
import type { Capture } from '../requests/captures.ts';
import { handedDelivery, type Handoff, type HandedRow } from '../delivery/handoff.ts';
import { leaseIdSql } from '../delivery/lease-id.ts';

/**
 * What became of one capture:
 * - stored: committed (with its deliveries); only now may the sender get a 2xx;
 * - endpoint_gone: the endpoint was deleted after the slug was looked up (404);
 * - endpoint_paused: it was paused after the slug was looked up (423);
 * - endpoint_busy: the endpoint row is locked by a delete in progress (503, retry);
 * - overloaded: too much is already waiting for the database (503, retry).
 * A database failure rejects the promise (503): never an acknowledgement.
 */
export type StoreOutcome = 'stored' | 'endpoint_gone' | 'endpoint_paused' | 'endpoint_busy' | 'overloaded';

/**
 * The capture statement: a whole group of captures AND their deliveries in
 * ONE statement, sent on its own (autocommit). A single statement is atomic,
 * so a capture still never commits without its deliveries (DESIGN.md,
 * "Durable ack"), and a group costs one round trip and one WAL flush instead
 * of BEGIN, insert, target lookup, delivery insert, NOTIFY and COMMIT.
 *
 * - `live` locks the group's endpoints FOR KEY SHARE SKIP LOCKED: only
 *   captures of endpoints that exist and are not paused are inserted, so a
 *   pause or delete that committed before this statement is obeyed whatever
 *   the ingest cache said. The lock keeps those endpoints from being deleted
 *   until we commit (pausing does not conflict with it); SKIP LOCKED keeps a
 *   slow delete of an endpoint with a million captures from stalling every
 *   other group. Each id is looked up on its own, through a lateral: a
 *   generic plan (src/db/db.ts, QueryOptions) of `e.id = any($8)` does not
 *   know how many ids there are, and on PGlite it chose to walk the whole
 *   (organization_id, id) index for them instead of probing the primary key.
 * - `u` is the group as rows: ids, times and body offsets travel as array
 *   parameters, the text columns (method, path, query, headers, content
 *   type, source address, and for an endpoint with signature verification
 *   its status, reason and `rejected`, src/verification) as one JSON array
 *   of one array per capture, zipped
 *   back into rows by ROWS FROM (unnest(...), jsonb_array_elements(...));
 *   the bodies travel as ONE binary bytea parameter cut apart by byte
 *   offsets (no hex doubling, no array literal to parse). It is a named
 *   statement, parsed and planned once per connection (src/db: on PGlite
 *   that also makes it one call into the database instead of six, with the
 *   blob in binary format).
 * - `targets` are where each live endpoint forwards to (src/delivery/enqueue.ts
 *   forwardTargets() is the same rule for replays): its forward_url first,
 *   then its enabled forward destinations in sort_order. `queued` inserts one
 *   delivery per capture and target. A delivery's id is its capture's id
 *   (time and per-process sequence, so deliveries are claimed in arrival
 *   order) with the target's position in the variant byte, so it is a
 *   UUIDv7 of the capture's millisecond. Its other random bits are the
 *   capture's own (56 of them): no gen_random_uuid() a delivery, which on
 *   PGlite opens and reads /dev/urandom each time (2.6 µs a call, several
 *   times what the rest of the id costs).
 *   A capture that enforce rejected (`rejected`), or a duplicate
 *   (`duplicate_of`, src/routing/dedup.ts), is stored but gets no delivery
 *   and no announcement.
 * - HANDOFF (src/delivery/handoff.ts): with room in this node's HTTPS
 *   worker ($10 deliveries, read just before), a delivery a claim would
 *   send at once (HTTPS, no rate limit, no HTTPS delivery due and waiting
 *   ahead of it) is inserted `in_flight` under a lease of $12 for $11 ms,
 *   the first $10 of them in id order, and returned in `handed`; the
 *   caller gives them to the worker, which sends them without a claim.
 *   Only outside a transaction: the lease must not be handed out before
 *   the deliveries commit. Without room ($10 = 0) it changes nothing.
 * - pg_notify wakes the delivery workers once, on commit, when anything was
 *   queued `pending`.
 * - `announced` writes the request.captured outbox (src/subscriptions/capture-events.ts):
 *   one row per capture of an endpoint a live request.captured subscription
 *   covers, so the announcement commits with the capture or not at all. The
 *   question is asked once per endpoint of the group, in `live`, through a
 *   partial index holding only such subscriptions: an organization without
 *   one pays an empty index probe per endpoint and group, and no write.
 *   Only a group that wrote announcements wakes the producer (pg_notify on
 *   CAPTURES_CHANNEL), so the notification queue's lock is not taken for
 *   the captures of organizations without such subscriptions.
 *
 * This reads endpoints, forward_destinations and subscriptions and writes
 * captured_requests, deliveries and capture_announcements, tables
 * src/endpoints, src/destinations, src/subscriptions, src/requests and
 * src/delivery own: it is the one place where doing it together pays, a
 * round trip per group on the hottest path. Byte-exactness on both drivers
 * is tested in test/requests/captures.test.ts.
 */
function captureStatement(dedup: boolean): string {
  // The captures that are forwarded and announced: not refused by enforce, not a duplicate.
  const passed = dedup ? 'not u.rejected and u.duplicate_of is null' : 'not u.rejected';
  return `
with live as (
  select e.id, e.paused, e.forward_url,
         exists (select from subscriptions s
                  where s.organization_id = e.organization_id and 'request.captured' = any(s.event_types) and s.status <> 'unsubscribed'
                    and (s.endpoint_id is null or s.endpoint_id = e.id)) as announce
    from unnest($8::uuid[]) as k(id)
         cross join lateral (select e.* from endpoints e where e.id = k.id for key share of e skip locked) e
), ${dedup ? 'u0' : 'u'} as (
  select u.id, u.organization_id, u.endpoint_id, u.received_at, u.off, u.len, live.announce,
         u.r->>0 as method, u.r->>1 as path, u.r->>2 as query, u.r->3 as headers, u.r->>4 as content_type, u.r->>5 as source_ip,
         u.r->>6 as verification_status, u.r->>7 as verification_reason, coalesce((u.r->>8)::boolean, false) as rejected${dedup ? ', u.r->>9 as dedup_key, (u.r->>10)::int as dedup_window' : ''}
    from rows from (unnest($1::uuid[]), unnest($2::uuid[]), unnest($3::uuid[]), unnest($4::timestamptz[]),
                    unnest($5::int[]), unnest($6::int[]), jsonb_array_elements($7::jsonb))
           as u(id, organization_id, endpoint_id, received_at, off, len, r)
         join live on live.id = u.endpoint_id and not live.paused${dedup ? DEDUP_CTES : ''}
), blob as (
  select $9::bytea as bytes
), stored as (
  insert into captured_requests
    (id, organization_id, endpoint_id, received_at, method, path, query, headers, body, body_size, content_type, source_ip,
     verification_status, verification_reason, rejected${dedup ? ', duplicate_of' : ''})
  select u.id, u.organization_id, u.endpoint_id, u.received_at, u.method, u.path, u.query, u.headers, b.body,
         octet_length(b.body), u.content_type, u.source_ip, u.verification_status, u.verification_reason, u.rejected${dedup ? ', u.duplicate_of' : ''}
    from u, blob cross join lateral (select substring(blob.bytes from u.off + 1 for u.len) as body) b
), announced as (
  insert into capture_announcements (capture_id, organization_id, endpoint_id, received_at)
  -- a duplicate (src/routing/dedup.ts) is not announced, as it is not forwarded: a request.captured
  -- subscriber hears of a provider's retried event once, as its destinations do
  select u.id, u.organization_id, u.endpoint_id, u.received_at from u where u.announce and ${passed}
  returning 1
), targets as materialized (
  select t.*, least(row_number() over (partition by t.endpoint_id order by t.sort_order, t.forward_destination_id nulls first) - 1, 63)::int as position
    from (select live.id as endpoint_id, null::uuid as forward_destination_id, 'https'::text as destination_type,
                 live.forward_url as url, null::uuid as agent_id, -1 as sort_order, true as unpaced,
                 null::text as method_override, null::boolean as retry_enabled, null::int[] as retry_schedule,
                 null::boolean as intelligent_retry, null::text as filter_version, null::jsonb as transformation
            from live where not live.paused and live.forward_url is not null
          union all
          -- each live endpoint's destinations by index (forward_destinations_endpoint): the lateral with
          -- offset 0 is not flattened into a join, which a generic plan (db.ts, QueryOptions) made
          -- without statistics hashed against a read of the whole table
          select fd.endpoint_id, fd.id, fd.destination_type, fd.url, fd.agent_id, fd.sort_order,
                 not (fd.rate_limit_enabled and fd.rate_limit_per_minute is not null),
                 -- what the claim reads of a destination (claim-statement.ts), for a delivery handed off
                 fd.method_override, fd.retry_enabled, fd.retry_schedule, fd.intelligent_retry,
                 case when fd.filter is not null then fd.updated_at::text end, fd.transformation
            from live cross join lateral (select fd.* from forward_destinations fd
                                           where fd.endpoint_id = live.id and fd.enabled offset 0) fd
           where not live.paused) t
), handoff as (
  -- HANDOFF (above): room in this node's worker ($10), and no HTTPS delivery due and waiting that a
  -- claim would take first (one probe of deliveries_due, in a function so that no generic plan of this
  -- statement can read the table for it: migration 0024; skipped without room or targets, as AND stops early)
  select $10::int > 0 and exists (select from targets) and not deliveries_https_waiting() as open
), planned as (
  select encode(set_byte(uuid_send(u.id), 8, 128 + t.position), 'hex')::uuid as id,
         u.organization_id, u.id as request_id, u.received_at, t.endpoint_id, t.forward_destination_id, t.destination_type, t.url, t.agent_id,
         t.destination_type = 'https' and t.unpaced as eligible
    from targets t join u on u.endpoint_id = t.endpoint_id and ${passed}
   where exists (select from targets)
), queued as (
  insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id,
                          forward_destination_id, destination_type, url, agent_id,
                          status, lease_until, leased_by, lease_id)
  select p.id, p.organization_id, p.request_id, p.received_at, p.endpoint_id, p.forward_destination_id, p.destination_type, p.url, p.agent_id,
         case when p.handed then 'in_flight' else 'pending' end,
         case when p.handed then now() + $11::int * interval '1 millisecond' end,
         case when p.handed then $12::text end,
         -- the delivery's first lease, seeded by the node (leaseIdSql)
         case when p.handed then ${leaseIdSql('$12', 'p.id')} end
    from (select planned.*, planned.eligible and handoff.open
                 and count(*) filter (where planned.eligible) over (order by planned.id rows unbounded preceding) <= $10::int as handed
            from planned, handoff) p
   -- inserted in id order (capture, then position), whatever the join did: deliveries due at the same
   -- moment sit in deliveries_due in the order they were inserted, and the claim walks it in that order
   order by p.id
  returning id, status, lease_id, request_id, endpoint_id, forward_destination_id, url
), handed as (
  select json_agg(json_build_array(q.id, q.lease_id, q.request_id, q.forward_destination_id, q.url, t.method_override, t.retry_enabled,
                                   t.retry_schedule, t.intelligent_retry, t.filter_version, t.transformation) order by q.id) as rows
    from queued q join targets t on t.endpoint_id = q.endpoint_id and t.forward_destination_id is not distinct from q.forward_destination_id
   where q.status = 'in_flight'
)
-- workers are woken only for deliveries left waiting: the handed ones are this node's already
select id, paused, (select pg_notify('${DELIVERY_CHANNEL}', '') from queued where status = 'pending' limit 1) is not null as woke,
       (select pg_notify('${CAPTURES_CHANNEL}', '') from announced limit 1) is not null as announced,
       (select rows from handed) as handed
  from live`;
}

/**
 * Deduplication (src/routing/dedup.ts), only in the variant run for a group
 * holding a capture with a deduplication key: `keys` claims each key of the
 * group for its earliest capture (insert ... on conflict on
 * capture_dedup_keys). A key whose window is still open keeps its first
 * capture; the upsert returns the row either way, the one another node's
 * statement committed a moment ago included (the conflict waits for it), so
 * exactly one capture of a key is ever the first. `u` then marks every other
 * capture of the key duplicate_of that first one; duplicates are stored but
 * get no delivery. A capture rejected by enforced verification claims no key.
 */
const DEDUP_CTES = `
), keys as (
  insert into capture_dedup_keys as k (endpoint_id, key_hash, capture_id, expires_at)
  select distinct on (u0.endpoint_id, u0.dedup_key) u0.endpoint_id, decode(u0.dedup_key, 'hex'), u0.id,
         u0.received_at + u0.dedup_window * interval '1 second'
    from u0 where u0.dedup_key is not null and not u0.rejected
   order by u0.endpoint_id, u0.dedup_key, u0.id
  on conflict (endpoint_id, key_hash) do update
     set capture_id = case when k.expires_at <= now() then excluded.capture_id else k.capture_id end,
         expires_at = case when k.expires_at <= now() then excluded.expires_at else k.expires_at end
  returning k.endpoint_id, k.key_hash, k.capture_id
), u as (
  select u0.*, case when keys.capture_id <> u0.id then keys.capture_id end as duplicate_of
    from u0 left join keys on keys.endpoint_id = u0.endpoint_id and keys.key_hash = decode(u0.dedup_key, 'hex')`;

/** The capture statement, and its variant with deduplication (exported for the tests of their plans). */
export const CAPTURE_STATEMENT = captureStatement(false);
export const CAPTURE_STATEMENT_DEDUP = captureStatement(true);

/**
 * Stores a group of captures with their deliveries in one statement (above)
 * and says what became of each. Outside a transaction it commits on its own;
 * a caller may also run it inside one (slower on PGlite, where only the
 * database object itself runs named statements).
 */
export async function storeCaptures(db: Queryable, captures: readonly Capture[], handoff?: Handoff): Promise<StoreOutcome[]> {
  if (captures.length === 0) return [];
  // Ids, times and offsets travel as arrays in binary (src/db/binary-arrays.ts:
  // nothing to quote here, nothing for the database to parse); every text
  // column of a capture travels in ONE JSON document for the group, made by
  // JSON.stringify, so no string is escaped by hand or by the drivers'
  // per-element serialisation (which was a measurable share of the ingest
  // process's CPU).
  const n = captures.length;
  const ids = new Array<string>(n), orgs = new Array<string>(n), endpoints = new Array<string>(n);
  const times = new Array<Date>(n), offsets = new Array<number>(n), lengths = new Array<number>(n);
  // [method, path, query, headers, content_type, source_ip] and, only for an
  // endpoint with verification, [verification_status, verification_reason,
  // rejected]: the statement reads absent elements as null / false, so
  // captures without verification carry nothing more.
  const texts = new Array<unknown[]>(n);
  const bodies = new Array<Buffer>(n);
  let total = 0;
  let dedup = false;
  for (let i = 0; i < n; i++) {
    const c = captures[i];
    ids[i] = c.id;
    orgs[i] = c.organization_id;
    endpoints[i] = c.endpoint_id;
    times[i] = c.received_at;
    offsets[i] = total;
    lengths[i] = c.body.length;
    texts[i] = c.verification_status
      ? [c.method, c.path, c.query, c.headers, c.content_type, c.source_ip, c.verification_status, c.verification_reason ?? null, c.rejected === true]
      : [c.method, c.path, c.query, c.headers, c.content_type, c.source_ip];
    // deduplication (src/routing/dedup.ts): the key's digest and window at 9 and 10
    if (c.dedup_key) {
      dedup = true;
      if (!c.verification_status) texts[i].push(null, null, false);
      texts[i].push(c.dedup_key, c.dedup_window_seconds);
    }
    bodies[i] = c.body;
    total += c.body.length;
  }
  const distinct = [...new Set(endpoints)];
  // HANDOFF: how many fresh deliveries this node's worker takes now (0: none are leased)
  const room = handoff ? handoff.room() : 0;
  const { rows } = await db.query<{ id: string; paused: boolean; handed: HandedRow[] | null }>(
    dedup ? CAPTURE_STATEMENT_DEDUP : CAPTURE_STATEMENT,
    [
      uuidArray(ids), uuidArray(orgs), uuidArray(endpoints), timestamptzArray(times), int4Array(offsets), int4Array(lengths), JSON.stringify(texts), uuidArray(distinct),
      Buffer.concat(bodies, total), room, handoff?.leaseMs ?? 0, handoff?.node ?? '',
    ],
    { name: dedup ? 'weir_capture_dedup' : 'weir_capture' },
  );
  const handed = rows[0]?.handed;
  if (handoff && handed && handed.length > 0) {
    const byId = new Map(captures.map((c) => [c.id, c]));
    handoff.adopt(handed.map((h) => handedDelivery(h, byId.get(h[2])!)));
  }
  const live = new Map(rows.map((r) => [r.id, r.paused]));
  let busy: Set<string> | undefined;
  const missing = distinct.filter((id) => !live.has(id));
  if (missing.length > 0) {
    // Absent from the locked read: deleted (404), or locked by a delete still
    // running (503, the sender retries and then gets the right answer).
    const found = await db.query<{ id: string }>('select id from endpoints where id = any($1::uuid[])', [missing]);
    busy = new Set(found.rows.map((r) => r.id));
  }
  return endpoints.map((id) => {
    const paused = live.get(id);
    if (paused === undefined) return busy?.has(id) ? 'endpoint_busy' : 'endpoint_gone';
    return paused ? 'endpoint_paused' : 'stored';
  });
}

