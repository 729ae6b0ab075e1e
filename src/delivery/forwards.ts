import { asBuffer, type Queryable } from '../db/db.ts';
import { webhookIdOf } from './forward-request.ts';

export interface ForwardAttempt {
  id: string;
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  url: string | null;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  response_headers: Array<[string, string]> | null;
  /** UTF-8 text when the bytes are valid UTF-8, else base64 (see response_body_encoding). */
  response_body: string | null;
  response_body_encoding: 'utf8' | 'base64' | null;
  response_body_truncated: boolean;
  /** sha256 of the transformation code the attempt ran (src/transformations); null without one. */
  transformation_hash: string | null;
  /** The rate-limit (or paced replay) slot the attempt waited for; null when it was not paced. */
  scheduled_at: string | null;
}

/** One delivery of a captured request (the original fan-out or a replay) with every attempt, oldest first. */
export interface Forward {
  id: string;
  request_id: string;
  endpoint_id: string;
  destination_id: string | null;
  destination_name: string | null;
  destination_type: string;
  url: string | null;
  agent_id: string | null;
  webhook_id: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  /** Routing (docs/routing.md): status `filtered` names the first rule of the destination's filter that failed. */
  filter_reason: string | null;
  replay_batch_id: string | null;
  created_at: string;
  updated_at: string;
  attempts: ForwardAttempt[];
}

export type ForwardsResult = { ok: true; forwards: Forward[] } | { ok: false; reason: 'request_not_found' };

const iso = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());

function bodyText(body: Buffer | null): { text: string | null; encoding: 'utf8' | 'base64' | null } {
  if (body === null) return { text: null, encoding: null };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(body), encoding: 'utf8' };
  } catch {
    return { text: body.toString('base64'), encoding: 'base64' };
  }
}

/**
 * The deliveries of one captured request, newest first, `limit + 1` of them
 * (the caller pages with toPage), each with all of its attempts.
 */
export async function listForwards(
  db: Queryable,
  q: { organizationId: string; requestId: string; limit: number; before?: string },
): Promise<ForwardsResult> {
  const { rows: captures } = await db.query<{ id: string; headers: Array<[string, string]> }>(
    `select id, headers from captured_requests where id = $1::uuid and organization_id = $2::uuid`,
    [q.requestId, q.organizationId],
  );
  if (captures.length === 0) return { ok: false, reason: 'request_not_found' };
  const webhookId = webhookIdOf(captures[0]);
  const { rows } = await db.query<any>(
    `select d.*, fd.name as destination_name
       from deliveries d
       left join forward_destinations fd on fd.id = d.forward_destination_id
      where d.request_id = $1::uuid and d.organization_id = $2::uuid and ($3::uuid is null or d.id < $3::uuid)
      order by d.id desc
      limit $4`,
    [q.requestId, q.organizationId, q.before ?? null, q.limit + 1],
  );
  const { rows: attempts } = await db.query<any>(
    `select id, delivery_id, attempt_number, started_at, duration_ms, url, status_code, error_class, error_message,
            response_headers, response_body, response_body_truncated, transformation_hash, scheduled_at
       from delivery_attempts where delivery_id = any($1::uuid[]) order by delivery_id, attempt_number, started_at`,
    [rows.map((r) => r.id)],
  );
  const byDelivery = new Map<string, ForwardAttempt[]>();
  for (const a of attempts) {
    const { text, encoding } = bodyText(a.response_body ? asBuffer(a.response_body) : null);
    const list = byDelivery.get(a.delivery_id) ?? [];
    list.push({
      id: a.id,
      attempt_number: a.attempt_number,
      started_at: iso(a.started_at)!,
      duration_ms: a.duration_ms,
      url: a.url,
      status_code: a.status_code,
      error_class: a.error_class,
      error_message: a.error_message,
      response_headers: a.response_headers,
      response_body: text,
      response_body_encoding: encoding,
      response_body_truncated: a.response_body_truncated,
      transformation_hash: a.transformation_hash ?? null,
      scheduled_at: iso(a.scheduled_at),
    });
    byDelivery.set(a.delivery_id, list);
  }
  const forwards = rows.map(
    (d): Forward => ({
      id: d.id,
      request_id: d.request_id,
      endpoint_id: d.endpoint_id,
      destination_id: d.forward_destination_id,
      destination_name: d.forward_destination_id ? d.destination_name : 'forward_url',
      destination_type: d.destination_type,
      url: d.url,
      agent_id: d.agent_id,
      webhook_id: webhookId,
      status: d.status,
      attempt_count: d.attempt_count,
      next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
      last_status_code: d.last_status_code,
      last_error: d.last_error,
      filter_reason: d.filter_reason ?? null,
      replay_batch_id: d.replay_batch_id,
      created_at: iso(d.created_at)!,
      updated_at: iso(d.updated_at)!,
      attempts: byDelivery.get(d.id) ?? [],
    }),
  );
  return { ok: true, forwards };
}
