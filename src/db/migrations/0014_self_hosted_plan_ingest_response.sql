-- Issue 28, items 3 and 6.
--
-- The plan self_hosted: what a self-hosted install's first organization
-- gets when no WEIR_PLANS is set (src/orgs/plans.ts).
alter table organizations drop constraint organizations_plan_check;
alter table organizations add constraint organizations_plan_check
  check (plan in ('free', 'starter', 'pro', 'business', 'self_hosted'));

-- An endpoint's custom ingest answer, {status, headers: [[name, value], ...],
-- body}; null keeps the default 200 {"request_id": ...}. Headers are pairs
-- because jsonb reorders object keys and the answer keeps the order given.
-- Validated by src/endpoints/ingest-response.ts before it is written.
alter table endpoints add column response jsonb;
