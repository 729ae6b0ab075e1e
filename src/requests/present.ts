import { isUtf8 } from 'node:buffer';
import type { Capture, CaptureSummary } from './captures.ts';

/** A capture without its body, as list items show it. */
export function presentCaptureSummary(c: CaptureSummary) {
  return {
    id: c.id,
    endpoint_id: c.endpoint_id,
    received_at: c.received_at,
    method: c.method,
    path: c.path,
    query: c.query,
    headers: c.headers.map(([name, value]) => ({ name, value })),
    content_type: c.content_type,
    body_size: c.body_size,
    source_ip: c.source_ip,
    verification: c.verification_status ? { status: c.verification_status, reason: c.verification_reason ?? null } : null,
    rejected: c.rejected ?? false,
    duplicate_of: c.duplicate_of ?? null,
  };
}

/**
 * The full record. JSON cannot carry arbitrary bytes, so the body is text
 * when it is valid UTF-8 and base64 otherwise; body_encoding says which.
 * GET /v1/requests/:id/body returns the bytes themselves.
 */
export function presentCapture(c: Capture) {
  const text = isUtf8(c.body);
  return {
    ...presentCaptureSummary(c),
    body: c.body.toString(text ? 'utf8' : 'base64'),
    body_encoding: text ? 'utf8' : 'base64',
  };
}
