import type { Queryable } from '../db/db.ts';
import { listAgents } from '../agents/agents.ts';
import { listEndpoints } from '../endpoints/endpoints.ts';
import type { PlanLimits, PlanName } from '../orgs/plans.ts';
import { idFloor } from '../requests/capture-ids.ts';
import { dayString, lastRolledDay } from './rollup.ts';

const DAY_MS = 86_400_000;

export interface Counts {
  captures: number;
  bytes_captured: number;
  forwards: { attempted: number; succeeded: number; failed: number };
  replayed: number;
}

/** The calendar month (UTC) holding `now`, and the one before: [start, end). */
export function billingPeriods(now: number): { current: [number, number]; previous: [number, number] } {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  const prev = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1);
  return { current: [start, end], previous: [prev, start] };
}

/**
 * An organization's counts in [from, to) (whole UTC days): rolled-up days
 * from usage_daily, the days after the last roll-up counted from the
 * tables themselves (liveUsageStatement). Both
 * parts are exact, and every node reads the same figures.
 */
export async function countUsage(db: Queryable, organizationId: string, from: number, to: number, endpointIds: readonly string[]): Promise<Counts> {
  const last = await lastRolledDay(db);
  const liveFrom = Math.max(from, last ? Date.parse(`${last}T00:00:00Z`) + DAY_MS : from);
  const { rows } = await db.query<Record<string, string>>(
    `select coalesce(sum(captures), 0) as captures, coalesce(sum(bytes_captured), 0) as bytes_captured,
            coalesce(sum(forwards_attempted), 0) as attempted, coalesce(sum(forwards_succeeded), 0) as succeeded,
            coalesce(sum(forwards_failed), 0) as failed, coalesce(sum(replayed), 0) as replayed
       from usage_daily where organization_id = $1::uuid and day >= $2::date and day < $3::date`,
    [organizationId, dayString(from), dayString(Math.min(to, liveFrom))],
  );
  const c = rows[0];
  const out: Counts = {
    captures: Number(c.captures),
    bytes_captured: Number(c.bytes_captured),
    forwards: { attempted: Number(c.attempted), succeeded: Number(c.succeeded), failed: Number(c.failed) },
    replayed: Number(c.replayed),
  };
  if (liveFrom >= to) return out;
  const live = liveUsageStatement(organizationId, endpointIds, liveFrom, to);
  const { rows: liveRows } = await db.query<Record<string, string>>(live.text, live.params);
  const l = liveRows[0];
  out.captures += Number(l.captures);
  out.bytes_captured += Number(l.bytes_captured);
  out.forwards.attempted += Number(l.attempted);
  out.forwards.succeeded += Number(l.succeeded);
  out.forwards.failed += Number(l.failed);
  out.replayed += Number(l.replayed);
  return out;
}

/**
 * The counts of [from, to) not rolled up yet, from the tables: captures by
 * the organization's endpoints through the capture index; attempts and
 * replays through indexes led by organization_id (migration 0015), so the
 * read is one tenant's rows, not every tenant's rows of those days
 * (test/usage/usage-plans.test.ts holds the plan to that).
 */
export function liveUsageStatement(organizationId: string, endpointIds: readonly string[], from: number, to: number): { text: string; params: unknown[] } {
  return {
    text: `select (select count(*) from captured_requests
               where endpoint_id = any($2::uuid[]) and id >= $5::uuid and id < $6::uuid
                 and received_at >= $3::timestamptz and received_at < $4::timestamptz) as captures,
            (select coalesce(sum(body_size), 0) from captured_requests
               where endpoint_id = any($2::uuid[]) and id >= $5::uuid and id < $6::uuid
                 and received_at >= $3::timestamptz and received_at < $4::timestamptz) as bytes_captured,
            a.attempted, a.succeeded, a.failed,
            (select count(*) from deliveries where organization_id = $1::uuid and replay_batch_id is not null
                and created_at >= $3::timestamptz and created_at < $4::timestamptz) as replayed
       from (select count(*) as attempted, count(*) filter (where error_class is null) as succeeded,
                    count(*) filter (where error_class is not null) as failed
               from delivery_attempts where organization_id = $1::uuid and started_at >= $3::timestamptz and started_at < $4::timestamptz) a`,
    params: [organizationId, endpointIds, new Date(from).toISOString(), new Date(to).toISOString(), idFloor(from), idFloor(to)],
  };
}

export interface DayCounts extends Counts {
  day: string;
}

/**
 * The organization's counts per UTC day in [from, to): rolled-up days in one
 * read of usage_daily (a day with nothing is absent from it, answered as
 * zeros), the days after the last roll-up counted live one by one.
 */
export async function dailyUsage(db: Queryable, organizationId: string, from: number, to: number, endpointIds: readonly string[]): Promise<DayCounts[]> {
  const last = await lastRolledDay(db);
  const liveFrom = Math.max(from, last ? Date.parse(`${last}T00:00:00Z`) + DAY_MS : from);
  const { rows } = await db.query<Record<string, string>>(
    `select day::text as day, captures, bytes_captured, forwards_attempted as attempted, forwards_succeeded as succeeded,
            forwards_failed as failed, replayed
       from usage_daily where organization_id = $1::uuid and day >= $2::date and day < $3::date`,
    [organizationId, dayString(from), dayString(Math.min(to, liveFrom))],
  );
  const rolled = new Map(rows.map((r) => [r.day, r]));
  const out: DayCounts[] = [];
  for (let d = from; d < to; d += DAY_MS) {
    const day = dayString(d);
    if (d >= liveFrom) {
      out.push({ day, ...(await countUsage(db, organizationId, d, d + DAY_MS, endpointIds)) });
      continue;
    }
    const r = rolled.get(day);
    out.push({
      day,
      captures: Number(r?.captures ?? 0),
      bytes_captured: Number(r?.bytes_captured ?? 0),
      forwards: { attempted: Number(r?.attempted ?? 0), succeeded: Number(r?.succeeded ?? 0), failed: Number(r?.failed ?? 0) },
      replayed: Number(r?.replayed ?? 0),
    });
  }
  return out;
}

/** GET /v1/usage: this billing period (in total and per day so far) and the last, the plan's limits, and storage. */
export async function getUsage(db: Queryable, org: { id: string; plan: PlanName }, limits: PlanLimits, now = Date.now()) {
  const { current, previous } = billingPeriods(now);
  const endpoints = (await listEndpoints(db, org.id)).map((e) => e.id);
  const agents = await listAgents(db, org.id, { limit: 100_000 });
  const dayStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  const retainedFrom = dayStart - (limits.retention_days - 1) * DAY_MS;
  const [cur, days, prev, retained] = await Promise.all([
    countUsage(db, org.id, current[0], current[1], endpoints),
    dailyUsage(db, org.id, current[0], dayStart + DAY_MS, endpoints),
    countUsage(db, org.id, previous[0], previous[1], endpoints),
    countUsage(db, org.id, retainedFrom, dayStart + DAY_MS, endpoints),
  ]);
  const period = (p: [number, number]) => ({ start: new Date(p[0]).toISOString(), end: new Date(p[1]).toISOString() });
  return {
    plan: org.plan,
    current_period: { ...period(current), ...cur },
    previous_period: { ...period(previous), ...prev },
    // the current period's days up to today, oldest first: what a chart of the month draws
    days,
    limits: {
      endpoints: { used: endpoints.length, limit: limits.max_endpoints },
      production_agents: { used: agents.filter((a) => a.environment === 'production').length, limit: limits.max_agents },
      forward_destinations_per_endpoint: { limit: limits.max_forward_destinations },
      incident_replay: limits.incident_replay,
    },
    storage: { retention_days: limits.retention_days, captures_retained: retained.captures, bytes_retained: retained.bytes_captured },
  };
}
