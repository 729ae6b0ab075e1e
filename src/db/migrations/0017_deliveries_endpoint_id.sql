-- Issue 29: the forward_url recovery check (succeededSince in
-- src/delivery/replay-batch.ts) asks whether an endpoint's forward_url
-- answered 2xx recently, reading only deliveries created from an hour
-- before. On (endpoint_id) alone that bound was a filter: the scan walked
-- the endpoint's whole delivery history. With the id (time-ordered) in the
-- index it is a range, whatever the history. Every other reader of the old
-- index (by endpoint) uses its first column just as well, and an insert
-- still maintains one index.
drop index deliveries_endpoint;
create index deliveries_endpoint on deliveries (endpoint_id, id);
