import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { findEndpoint } from './endpoint-ref.ts';
import type { Role } from '../auth/permissions.ts';
import { transformationProblem } from '../transformations/check.ts';
import { agentAssignProblem, forwardPatchProblem, rateLimitProblem, type ForwardPatch, type ForwardSettings } from './rules.ts';

/**
 * Forward destinations: what one endpoint forwards each captured request to,
 * an HTTPS URL or an agent target. The endpoint's own forward_url is not a
 * row here; the delivery engine treats it as an implicit extra destination.
 */
export interface ForwardDestination {
  id: string;
  organization_id: string;
  endpoint_id: string;
  saved_destination_id: string | null;
  name: string;
  destination_type: 'https' | 'agent';
  url: string | null;
  agent_id: string | null;
  target_port: number | null;
  target_path: string | null;
  enabled: boolean;
  method_override: string | null;
  environment_override: 'development' | null;
  sort_order: number;
  retry_enabled: boolean;
  retry_schedule: number[];
  intelligent_retry: boolean;
  rate_limit_enabled: boolean;
  rate_limit_per_minute: number | null;
  /** Routing filter (src/routing/filter.ts), or null. */
  filter: unknown;
  transformation: { code: string } | null;
  created_at: Date;
  updated_at: Date;
}

export const FORWARD_COLUMNS = `id, organization_id, endpoint_id, saved_destination_id, name, destination_type, url, agent_id,
  target_port, target_path, enabled, method_override, environment_override, sort_order, retry_enabled, retry_schedule,
  intelligent_retry, rate_limit_enabled, rate_limit_per_minute, transformation, created_at, updated_at, filter`;

/** A forward destination to insert; settings left undefined take the column defaults. */
export type NewForwardDestination = { name: string; savedDestinationId?: string | null } & (
  | { destination_type: 'https'; url: string }
  | { destination_type: 'agent'; agent_id: string; target_port: number; target_path: string; environment_override: 'development' | null }
) &
  ForwardSettings;

const SETTING_COLUMNS = ['method_override', 'retry_enabled', 'retry_schedule', 'intelligent_retry', 'rate_limit_enabled', 'rate_limit_per_minute', 'filter', 'transformation'] as const;

// Column names in dynamic SQL come only from these constant lists, never from input.
const CASTS: Record<string, string> = {
  id: '::uuid',
  organization_id: '::uuid',
  endpoint_id: '::uuid',
  saved_destination_id: '::uuid',
  agent_id: '::uuid',
  target_port: '::int',
  sort_order: '::int',
  enabled: '::boolean',
  retry_enabled: '::boolean',
  retry_schedule: '::int[]',
  intelligent_retry: '::boolean',
  rate_limit_enabled: '::boolean',
  rate_limit_per_minute: '::int',
  filter: '::jsonb',
  transformation: '::jsonb',
};

/** jsonb columns go as JSON text; null stays SQL null (JSON.stringify(null) would be the JSON null). */
/** A setting's SQL parameter: jsonb columns travel as JSON text (null stays SQL null); a transformation keeps only its code. */
const columnValue = (c: string, v: unknown) =>
  v === null ? v : c === 'transformation' ? JSON.stringify({ code: (v as { code: string }).code }) : c === 'filter' ? JSON.stringify(v) : v;

export type AttachResult =
  | { ok: true; destination: ForwardDestination }
  | { ok: false; reason: 'endpoint_not_found'; message: string }
  | { ok: false; reason: 'plan_limit'; message: string };

/**
 * Adds a forward destination at the end of an endpoint's list. Must run in a
 * transaction: the endpoint row stays locked until commit, so the count
 * against `maxForwardDestinations` (https and agent, enabled or not) and the
 * insert cannot interleave with another attachment to the same endpoint.
 */
export async function attachForwardDestination(
  tx: Queryable,
  scope: { organizationId: string; endpointId: string; maxForwardDestinations: number; plan: string },
  d: NewForwardDestination,
): Promise<AttachResult> {
  const endpoint = await findEndpoint(tx, scope.organizationId, scope.endpointId, { lock: true });
  if (!endpoint) return { ok: false, reason: 'endpoint_not_found', message: `Endpoint ${scope.endpointId} not found.` };
  const { rows: counts } = await tx.query<{ n: number; next: number }>(
    `select count(*)::int as n, coalesce(max(sort_order), 0)::int + 1 as next from forward_destinations where endpoint_id = $1::uuid`,
    [endpoint.id],
  );
  const { n, next } = counts[0];
  if (n >= scope.maxForwardDestinations) {
    const max = scope.maxForwardDestinations;
    return {
      ok: false,
      reason: 'plan_limit',
      message: `Endpoint "${endpoint.name}" already has ${n} forward destination${n === 1 ? '' : 's'}; the ${scope.plan} plan allows ${max} per endpoint.`,
    };
  }
  const values: Record<string, unknown> = {
    id: newId(),
    organization_id: scope.organizationId,
    endpoint_id: endpoint.id,
    saved_destination_id: d.savedDestinationId ?? null,
    name: d.name,
    destination_type: d.destination_type,
    sort_order: next,
    ...(d.destination_type === 'https'
      ? { url: d.url }
      : { agent_id: d.agent_id, target_port: d.target_port, target_path: d.target_path, environment_override: d.environment_override }),
  };
  // Settings left out take the schema's defaults (one source of truth for the default retry schedule).
  for (const f of SETTING_COLUMNS) if (d[f] !== undefined) values[f] = columnValue(f, d[f]);
  const names = Object.keys(values);
  const { rows } = await tx.query<ForwardDestination>(
    `insert into forward_destinations (${names.join(', ')})
     values (${names.map((c, i) => `$${i + 1}${CASTS[c] ?? ''}`).join(', ')})
     returning ${FORWARD_COLUMNS}`,
    names.map((c) => values[c]),
  );
  return { ok: true, destination: rows[0] };
}

/** An endpoint's forward destinations in forwarding order, or undefined when the endpoint is not the organization's. */
export async function listForwardDestinations(db: Queryable, organizationId: string, endpointId: string): Promise<ForwardDestination[] | undefined> {
  if (!(await findEndpoint(db, organizationId, endpointId))) return undefined;
  const { rows } = await db.query<ForwardDestination>(
    `select ${FORWARD_COLUMNS} from forward_destinations
      where endpoint_id = $1::uuid and organization_id = $2::uuid
      order by sort_order, id`,
    [endpointId, organizationId],
  );
  return rows;
}

export async function getForwardDestination(
  db: Queryable,
  organizationId: string,
  endpointId: string,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<ForwardDestination | undefined> {
  const { rows } = await db.query<ForwardDestination>(
    `select ${FORWARD_COLUMNS} from forward_destinations
      where id = $1::uuid and endpoint_id = $2::uuid and organization_id = $3::uuid${opts.lock ? ' for update' : ''}`,
    [id, endpointId, organizationId],
  );
  return rows[0];
}

export type UpdateForwardResult =
  | { ok: true; destination: ForwardDestination }
  | { ok: false; reason: 'not_found' | 'forbidden' | 'invalid'; message: string };

const PATCH_COLUMNS = ['name', 'enabled', 'sort_order', 'environment_override', 'target_port', 'target_path', ...SETTING_COLUMNS] as const;

/**
 * Applies a PATCH to one forward destination of an endpoint. The row is
 * locked while the result is checked (a rate limit needs a rate, whichever
 * request set which), and nothing is written when any field is refused.
 */
export async function updateForwardDestination(
  tx: Queryable,
  organizationId: string,
  endpointId: string,
  id: string,
  patch: ForwardPatch,
  role: Role,
): Promise<UpdateForwardResult> {
  const current = await getForwardDestination(tx, organizationId, endpointId, id, { lock: true });
  if (!current) return { ok: false, reason: 'not_found', message: `Forward destination ${id} not found on endpoint ${endpointId}.` };
  const forbidden = current.destination_type === 'agent' ? agentAssignProblem(role) : undefined;
  if (forbidden) return { ok: false, reason: 'forbidden', message: forbidden };
  const problem =
    (await transformationProblem(patch.transformation)) ??
    forwardPatchProblem(current.destination_type, patch) ??
    rateLimitProblem(
      patch.rate_limit_enabled ?? current.rate_limit_enabled,
      patch.rate_limit_per_minute !== undefined ? patch.rate_limit_per_minute : current.rate_limit_per_minute,
    );
  if (problem) return { ok: false, reason: 'invalid', message: problem };
  const values: Record<string, unknown> = {};
  for (const c of PATCH_COLUMNS) if (patch[c] !== undefined) values[c] = c === 'name' ? (patch.name as string).trim() : columnValue(c, patch[c]);
  const names = Object.keys(values);
  if (names.length === 0) return { ok: true, destination: current };
  const { rows } = await tx.query<ForwardDestination>(
    `update forward_destinations
        set ${names.map((c, i) => `${c} = $${i + 2}${CASTS[c] ?? ''}`).join(', ')}, updated_at = now()
      where id = $1::uuid
      returning ${FORWARD_COLUMNS}`,
    [current.id, ...names.map((c) => values[c])],
  );
  return { ok: true, destination: rows[0] };
}

/** Removes one forward destination of an endpoint; false when there was none. */
/** Removes a forward destination; an agent one only for a role that may assign agents. */
export async function deleteForwardDestination(
  db: Queryable,
  organizationId: string,
  endpointId: string,
  id: string,
  role: Role,
): Promise<{ ok: true } | { ok: false; reason: 'not_found' | 'forbidden'; message: string }> {
  const notFound = { ok: false, reason: 'not_found', message: `Forward destination ${id} not found on endpoint ${endpointId}.` } as const;
  const current = await getForwardDestination(db, organizationId, endpointId, id);
  if (!current) return notFound;
  const forbidden = current.destination_type === 'agent' ? agentAssignProblem(role) : undefined;
  if (forbidden) return { ok: false, reason: 'forbidden', message: forbidden };
  const { rowCount } = await db.query(
    'delete from forward_destinations where id = $1::uuid and endpoint_id = $2::uuid and organization_id = $3::uuid',
    [id, endpointId, organizationId],
  );
  return rowCount > 0 ? { ok: true } : notFound;
}
