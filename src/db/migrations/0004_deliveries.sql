-- The delivery queue: one row per (captured request, destination) to forward
-- to, inserted in the capture's own transaction, and one attempt row per try.
-- docs/forwarding.md describes the life cycle.

create table deliveries (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  -- no foreign key to captured_requests: retention drops its partitions
  -- wholesale, which a referencing key would forbid. A delivery whose capture
  -- is gone fails with error_class 'capture_missing'.
  request_id uuid not null,
  -- the partition key of captured_requests, so a lookup reaches one partition
  request_received_at timestamptz not null,
  endpoint_id uuid not null references endpoints(id) on delete cascade,
  -- null: the endpoint's forward_url (an implicit https destination with the
  -- default retry settings and no rate limit)
  forward_destination_id uuid references forward_destinations(id) on delete cascade,
  destination_type text not null check (destination_type in ('https', 'agent')),
  -- https: the URL as it was when the delivery was queued; agent: null
  url text,
  agent_id uuid,
  -- pending: waits for next_attempt_at (first try or a scheduled retry)
  -- in_flight: claimed by a worker holding a lease until lease_until
  -- succeeded: a 2xx answer; failed: a non-retryable outcome or retries
  -- disabled; dead: the retry schedule ran out on retryable failures
  status text not null default 'pending' check (status in ('pending', 'in_flight', 'succeeded', 'failed', 'dead')),
  attempt_count integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  -- rate-limited destinations: the dispatch slot this delivery holds (see destination_pacing)
  paced_slot timestamptz,
  lease_until timestamptz,
  leased_by text,
  -- a fresh id per claim: a worker whose lease expired cannot overwrite the next holder's result
  lease_id uuid,
  -- set on deliveries created by a replay; one id per replay call
  replay_batch_id uuid,
  last_status_code integer,
  last_error text,
  last_attempt_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((destination_type = 'https') = (url is not null))
);
-- the claim scans this: only waiting rows, oldest due first
create index deliveries_due on deliveries (next_attempt_at) where status = 'pending';
-- lease recovery scans this
create index deliveries_leased on deliveries (lease_until) where status = 'in_flight';
create index deliveries_request on deliveries (request_id, id);
create index deliveries_destination on deliveries (forward_destination_id, id) where forward_destination_id is not null;
create index deliveries_endpoint on deliveries (endpoint_id);
create index deliveries_replay_batch on deliveries (replay_batch_id) where replay_batch_id is not null;
-- retention removes the deliveries of captures past the longest plan retention
create index deliveries_received on deliveries (request_received_at);

create table delivery_attempts (
  id uuid primary key,
  delivery_id uuid not null references deliveries(id) on delete cascade,
  organization_id uuid not null,
  attempt_number integer not null,
  -- the node that made the attempt (deliveries.leased_by at the time)
  node text,
  started_at timestamptz not null,
  duration_ms integer not null,
  url text,
  -- null when no HTTP answer arrived (network error, timeout, refused address)
  status_code integer,
  -- [[name, value], ...] as received
  response_headers jsonb,
  -- the first 64 KiB of the answer (RESPONSE_BODY_CAP in src/delivery/http-transport.ts)
  response_body bytea,
  response_body_truncated boolean not null default false,
  -- null on success; otherwise one of the classes in docs/forwarding.md
  error_class text,
  error_message text
);
create index delivery_attempts_delivery on delivery_attempts (delivery_id, attempt_number);

-- Smooth delivery: the next free dispatch slot of each rate-limited
-- destination, shared by every worker on every node. A claim takes slots by
-- advancing next_slot_at in the same statement, so two nodes never hand out
-- the same slot (the row lock of the upsert serialises them).
create table destination_pacing (
  destination_id uuid primary key references forward_destinations(id) on delete cascade,
  next_slot_at timestamptz not null
);
