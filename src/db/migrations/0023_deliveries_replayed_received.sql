-- Retention finds old deliveries without an index entry per delivery.
-- A capture's own deliveries have ids made from the capture's id (the
-- capture statement, src/ingest/store.ts: its first eight bytes, whose
-- first six are the capture's millisecond, which is request_received_at),
-- so a range of the primary key finds those of captures received before a
-- time. Only deliveries with ids of their own (replays, and any made
-- before ids were derived) need an index on request_received_at: this
-- partial one, whose predicate the retention sweep repeats word for word
-- (src/delivery/retention.ts). deliveries_received indexed every delivery
-- and was written at capture, at the claim and at the outcome of each;
-- without it a forward writes three index entries fewer.
drop index deliveries_received;
create index deliveries_replayed_received on deliveries (request_received_at)
  where substring(uuid_send(id) from 1 for 8) <> substring(uuid_send(request_id) from 1 for 8);
