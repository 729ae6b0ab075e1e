-- Issue 26: routing filters and duplicate suppression (docs/routing.md).
--
-- A forward destination's filter: null forwards everything; else the
-- filter object, validated by src/routing/filter.ts before it is written.
alter table forward_destinations add column filter jsonb;

-- A delivery whose capture did not match its destination's filter ends
-- `filtered` (not a failure: no attempt, no incident), with the first rule
-- that failed in filter_reason. A single-request replay may skip the filter
-- (ignore_filter). The list of statuses is the full one of issues 26 and 27.
alter table deliveries add column filter_reason text;
alter table deliveries add column ignore_filter boolean not null default false;
alter table deliveries drop constraint deliveries_status_check;
alter table deliveries add constraint deliveries_status_check
  check (status in ('pending', 'in_flight', 'succeeded', 'failed', 'dead', 'superseded', 'filtered', 'skipped')) not valid;
alter table deliveries validate constraint deliveries_status_check;

-- An endpoint's deduplication: null, or {window_seconds, key} (src/routing/dedup.ts).
alter table endpoints add column deduplication jsonb;

-- A duplicate capture names the first capture of its key within the window.
-- Nullable, no default: no rewrite of the partitions.
alter table captured_requests add column duplicate_of uuid;

-- The first capture of each (endpoint, key) while its window is open. The
-- capture statement claims a key with insert ... on conflict, so two nodes
-- racing on one key serialise on its row and exactly one capture is the
-- first. Rows whose window closed are pruned (pruneDedupKeys), so the table
-- holds at most one window's worth of keys.
create table capture_dedup_keys (
  endpoint_id uuid not null references endpoints(id) on delete cascade,
  key_hash bytea not null,
  capture_id uuid not null,
  expires_at timestamptz not null,
  primary key (endpoint_id, key_hash)
);
create index capture_dedup_keys_expires on capture_dedup_keys (expires_at);
