-- Organizations, members, API keys and the audit log: the tenancy and auth
-- model every other table hangs off. Every tenant-owned row carries
-- organization_id and every query filters on it.

create table organizations (
  id uuid primary key,
  name text not null,
  plan text not null check (plan in ('free', 'starter', 'pro', 'business')),
  region text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table members (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  email text not null,
  role text not null check (role in ('super_admin', 'admin', 'developer', 'viewer')),
  active boolean not null default true,
  -- scrypt$N$r$p$salt$hash, for the dashboard login; null until a password is set
  password_hash text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index members_org_email on members (organization_id, lower(email));

create table api_keys (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  member_id uuid not null references members(id) on delete cascade,
  name text not null,
  -- sha256 of the whole key; the key itself is never stored
  key_hash bytea not null unique,
  display_prefix text not null,
  access_mode text not null default 'full' check (access_mode in ('full', 'custom')),
  scopes text[] not null default '{}',
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_by uuid,
  created_at timestamptz not null default now()
);
create index api_keys_member on api_keys (member_id);
create index api_keys_org on api_keys (organization_id, created_at desc);

create table audit_log (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  -- 'operator' (operator API, no member) or 'member'
  actor_type text not null check (actor_type in ('operator', 'member', 'system')),
  actor_id uuid,
  action text not null,
  target_type text not null,
  target_id uuid,
  target_name text,
  details jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index audit_log_org on audit_log (organization_id, created_at desc, id desc);
