-- Endpoints (webhook receivers) and the requests captured on their public URL.

create table endpoints (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  created_by uuid references members(id) on delete set null,
  -- 16 lowercase alphanumerics from a CSPRNG; unique across live and retired slugs
  slug text not null unique,
  name text not null,
  description text,
  forward_url text,
  paused boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index endpoints_org on endpoints (organization_id, id);

-- A deleted endpoint's slug stays reserved so its old public URL can never
-- start capturing into someone else's endpoint.
create table retired_slugs (
  slug text primary key,
  retired_at timestamptz not null default now()
);

-- Captured requests, partitioned by day of receipt: retention drops whole
-- partitions instead of deleting rows. The id is a UUIDv7 whose timestamp is
-- received_at to the millisecond, so a lookup by id alone can name its
-- partition. A default partition catches anything outside the created range,
-- so an insert never fails for want of a partition.
create table captured_requests (
  id uuid not null,
  organization_id uuid not null,
  -- No foreign key: a key would check every inserted row with a query of its
  -- own (costly at capture rates, the more so on PGlite), while the capture
  -- statement already checks and locks its batch's endpoints once (FOR KEY
  -- SHARE, src/ingest/store.ts). Deleting an endpoint deletes its
  -- captures in the same transaction (src/endpoints/endpoints.ts).
  endpoint_id uuid not null,
  received_at timestamptz not null,
  method text not null,
  -- the part of the path after /h/{slug} ('' or starting with '/'), exactly as sent
  path text not null,
  -- the raw query string without '?', exactly as sent ('' when absent)
  query text not null,
  -- [[name, value], ...] in arrival order, original case, duplicates kept (from rawHeaders)
  headers jsonb not null,
  body bytea not null,
  body_size integer not null,
  content_type text,
  source_ip text,
  primary key (id, received_at)
) partition by range (received_at);
create index captured_requests_endpoint on captured_requests (endpoint_id, id desc);
create table captured_requests_default partition of captured_requests default;
