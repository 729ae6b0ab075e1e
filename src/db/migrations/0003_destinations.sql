-- Agents (enrolled machines that dial out), saved destinations (the
-- organization's library of reusable HTTPS targets) and forward destinations
-- (what one endpoint forwards to: an HTTPS URL or an agent target).

create table agents (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  name text not null,
  environment text not null check (environment in ('production', 'development')),
  -- sha256 of the agent's connection token; the token itself is never stored
  token_hash bytea not null unique,
  created_by uuid,
  revoked_at timestamptz,
  last_seen_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_org on agents (organization_id, id);

create table destinations (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  created_by uuid references members(id) on delete set null,
  name text not null,
  url text not null,
  visibility text not null default 'org' check (visibility in ('private', 'org', 'restricted')),
  is_reusable boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index destinations_org on destinations (organization_id, id);

create table forward_destinations (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  endpoint_id uuid not null references endpoints(id) on delete cascade,
  -- the saved destination this https attachment came from, if any
  saved_destination_id uuid references destinations(id) on delete set null,
  name text not null,
  destination_type text not null check (destination_type in ('https', 'agent')),
  url text,
  agent_id uuid references agents(id) on delete restrict,
  target_port integer check (target_port between 1 and 65535),
  target_path text,
  enabled boolean not null default true,
  method_override text,
  environment_override text check (environment_override = 'development'),
  sort_order integer not null default 0,
  -- retry: https destinations only (agents retry by environment)
  retry_enabled boolean not null default true,
  -- delays in seconds before attempt 2, 3, ...; Svix's schedule
  retry_schedule integer[] not null default '{5,300,1800,7200,18000,36000,36000}',
  intelligent_retry boolean not null default true,
  -- smooth delivery: dispatches evenly spaced at this rate, across all nodes
  rate_limit_enabled boolean not null default false,
  rate_limit_per_minute integer check (rate_limit_per_minute between 1 and 60000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- "destination_type https or agent, never both"
  check (
    (destination_type = 'https' and url is not null and agent_id is null and target_port is null and target_path is null)
    or (destination_type = 'agent' and url is null and agent_id is not null and target_port is not null and target_path is not null)
  )
);
create index forward_destinations_endpoint on forward_destinations (endpoint_id, sort_order, id);
create index forward_destinations_saved on forward_destinations (saved_destination_id) where saved_destination_id is not null;
create index forward_destinations_agent on forward_destinations (agent_id) where agent_id is not null;
