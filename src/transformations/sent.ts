import type { Queryable } from '../db/db.ts';
import type { SentRequest } from './run.ts';

/** The request the newest transformed attempt of a delivery sent, as the API shows it; undefined when it has none. */
export async function sentRequestOf(db: Queryable, organizationId: string, requestId: string, deliveryId: string) {
  const { rows } = await db.query<{ attempt_number: number; transformation_hash: string; sent_request: SentRequest }>(
    `select a.attempt_number, a.transformation_hash, a.sent_request
       from delivery_attempts a
       join deliveries d on d.id = a.delivery_id
      where a.delivery_id = $1::uuid and d.request_id = $2::uuid and d.organization_id = $3::uuid and a.sent_request is not null
      order by a.attempt_number desc, a.started_at desc
      limit 1`,
    [deliveryId, requestId, organizationId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const s = typeof r.sent_request === 'string' ? (JSON.parse(r.sent_request) as SentRequest) : r.sent_request;
  const bytes = Buffer.from(s.body_base64, 'base64');
  let body: string;
  let encoding: 'utf8' | 'base64' = 'utf8';
  try {
    body = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    body = s.body_base64;
    encoding = 'base64';
  }
  const headers: Array<[string, string]> = [];
  for (let i = 0; i + 1 < s.headers.length; i += 2) headers.push([s.headers[i], s.headers[i + 1]]);
  return {
    delivery_id: deliveryId,
    attempt_number: r.attempt_number,
    transformation_hash: r.transformation_hash,
    method: s.method,
    url: s.url,
    path: s.path,
    query: s.query,
    headers,
    body,
    body_encoding: encoding,
  };
}
