-- REST-hook subscriptions and the queue of their signed event deliveries.
-- docs/subscriptions.md describes the design.

create table subscriptions (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  -- request.* events of this endpoint only; null: every endpoint of the organization
  endpoint_id uuid references endpoints(id) on delete cascade,
  target_url text not null,
  event_types text[] not null,
  -- whsec_<base64>: signs every delivery (Standard Webhooks)
  secret text not null,
  -- after a rotation the old secret signs too, until previous_secret_expires_at
  previous_secret text,
  previous_secret_expires_at timestamptz,
  -- active; failing: deliveries keep failing (still sent); unsubscribed: the target answered 410 Gone
  status text not null default 'active' check (status in ('active', 'failing', 'unsubscribed')),
  status_reason text,
  consecutive_failures integer not null default 0,
  failing_since timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  -- request.captured: captures with ids up to this one have been turned into events
  capture_cursor uuid,
  created_by uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index subscriptions_org on subscriptions (organization_id, id);

-- One row per (event, subscription): the event's payload as it will be sent,
-- byte for byte on every retry, and the delivery state (the same life cycle
-- as deliveries: pending, in_flight, succeeded, failed, dead). A separate
-- table keeps the forward claim statement as it is.
create table subscription_events (
  -- also the webhook-id (evt_<id>): the same for every retry
  id uuid primary key,
  -- the order events were produced in: a subscription's events are sent in this order
  seq bigint generated always as identity,
  organization_id uuid not null references organizations(id) on delete cascade,
  subscription_id uuid not null references subscriptions(id) on delete cascade,
  event_type text not null,
  -- what produced it (a capture id for request.captured), so a re-scan never queues it twice
  source_id uuid,
  payload text not null,
  status text not null default 'pending' check (status in ('pending', 'in_flight', 'succeeded', 'failed', 'dead')),
  attempt_count integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  lease_until timestamptz,
  lease_id uuid,
  last_status_code integer,
  last_error text,
  last_attempt_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index subscription_events_due on subscription_events (next_attempt_at) where status = 'pending';
create index subscription_events_leased on subscription_events (lease_until) where status = 'in_flight';
create index subscription_events_subscription on subscription_events (subscription_id, seq);
create unique index subscription_events_source on subscription_events (subscription_id, source_id) where source_id is not null;

-- Organization usage (docs/usage.md): each closed UTC day's counts per
-- organization, rolled up once from the captures' day partition and the
-- delivery tables (src/usage/rollup.ts), before retention can delete any of
-- it. Days not rolled up yet (today, and yesterday for its first hour) are
-- counted from the tables when read. Ingest writes nothing here.
create table usage_daily (
  organization_id uuid not null references organizations(id) on delete cascade,
  day date not null,
  captures bigint not null default 0,
  bytes_captured bigint not null default 0,
  forwards_attempted bigint not null default 0,
  forwards_succeeded bigint not null default 0,
  forwards_failed bigint not null default 0,
  replayed bigint not null default 0,
  primary key (organization_id, day)
);
-- the days whose counts are in usage_daily, for every organization at once
create table usage_rollups (
  day date primary key,
  rolled_at timestamptz not null default now()
);
-- A block-range index: a few pages, cheap to keep up on an append-only
-- table written by the completion statement (not by ingest), enough to read
-- one day (or today) of attempts. Replays are counted through the existing
-- partial index on deliveries.replay_batch_id: nothing is added to the
-- capture statement, which inserts deliveries.
create index delivery_attempts_started on delivery_attempts using brin (started_at);
