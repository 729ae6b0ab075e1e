-- Incidents: correlated forward failures, their timeline, and paced replay
-- batches. docs/incidents.md describes the design.

create table incidents (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  status text not null default 'open' check (status in ('open', 'investigating', 'resolved')),
  scope text not null default 'destination',
  -- what groups failures: 'fd:<forward destination id>' or 'url:<forward_url>'
  scope_key text not null,
  destination_id uuid,
  destination_name text,
  destination_url text,
  asn bigint,
  asn_org text,
  -- destinations of the organization in the same ASN failing at once (1: only this one)
  asn_destination_count integer not null default 1,
  likely_cause text not null default '',
  failure_count integer not null default 0,
  endpoint_count integer not null default 0,
  first_failure_at timestamptz not null,
  last_failure_at timestamptz not null,
  is_recurring boolean not null default false,
  previous_incident_id uuid references incidents(id) on delete set null,
  investigating_at timestamptz,
  resolved_at timestamptz,
  -- a member id, or the nil uuid for the system (automatic resolution)
  resolved_by uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index incidents_org on incidents (organization_id, id);
-- the correlator looks up the latest incident of a scope
create index incidents_scope on incidents (organization_id, scope_key, id);
create index incidents_unresolved on incidents (id) where status <> 'resolved';

-- One row per failed delivery (request x destination), written by the
-- delivery completion statement in the same transaction as the delivery's
-- final status: the durable outbox of the correlator (incident_id null until
-- correlated).
create table incident_failures (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  incident_id uuid references incidents(id) on delete cascade,
  delivery_id uuid not null,
  request_id uuid not null,
  -- the capture's partition key, for the replay's delivery
  request_received_at timestamptz not null,
  endpoint_id uuid not null,
  forward_destination_id uuid,
  destination_type text not null,
  agent_id uuid,
  scope_key text not null,
  destination_url text not null,
  status_code integer,
  error_class text,
  error text,
  retry_after_s integer,
  failed_at timestamptz not null default now(),
  -- a later delivery of the same request to the same destination succeeded
  recovered_at timestamptz,
  -- the incident replay that re-sent it
  replay_batch_id uuid,
  replay_delivery_id uuid,
  replayed_at timestamptz,
  replay_status_code integer,
  unique (organization_id, request_id, scope_key)
);
create index incident_failures_outbox on incident_failures (id) where incident_id is null;
create index incident_failures_incident on incident_failures (incident_id, id);
-- the correlator asks whether an incident already has a failure of an endpoint
create index incident_failures_incident_endpoint on incident_failures (incident_id, endpoint_id);
create index incident_failures_request on incident_failures (request_id);
create index incident_failures_replay on incident_failures (replay_delivery_id) where replay_delivery_id is not null;

create table incident_updates (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  incident_id uuid not null references incidents(id) on delete cascade,
  body text not null,
  is_system boolean not null,
  -- the member who wrote it; the nil uuid for system updates
  author_id uuid not null,
  created_at timestamptz not null default now()
);
create index incident_updates_incident on incident_updates (incident_id, id);

create table replay_batches (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  incident_id uuid not null references incidents(id) on delete cascade,
  requests_per_minute integer not null check (requests_per_minute between 1 and 6000),
  status text not null default 'running' check (status in ('running', 'paused', 'cancelled', 'finished')),
  queued_count integer not null,
  created_by uuid,
  paused_reason text,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  updated_at timestamptz not null default now()
);
create index replay_batches_incident on replay_batches (incident_id, id);
create index replay_batches_active on replay_batches (id) where status in ('running', 'paused');

-- Pacing of a replay batch's deliveries, owned by the delivery claim (like
-- destination_pacing): the next free slot of the batch, advanced under the
-- row lock of the claim statement so every node shares one sequence.
create table replay_batch_pacing (
  replay_batch_id uuid primary key references replay_batches(id) on delete cascade,
  requests_per_minute integer not null,
  next_slot_at timestamptz not null default now()
);
