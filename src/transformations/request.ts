import { webhookIdOf, type CapturedMessage } from '../delivery/forward-request.ts';

/**
 * The request a handler sees and returns (docs/transformations.md), and the
 * conversions between it and a captured message.
 */
export interface SandboxRequest {
  method: string;
  /** The path after /h/{slug}: '' or starting with '/'. */
  path: string;
  /** The raw query string without '?'. */
  query: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Parsed JSON for a JSON content type, else the UTF-8 text, else null (context.body_base64). */
  body: unknown;
}

export interface SandboxContext {
  request_id: string;
  /** The same id: the capture's. */
  capture_id: string;
  endpoint_id: string;
  destination_id: string | null;
  received_at: string | null;
  /** Set when the body is not UTF-8 text (request.body is null then). */
  body_base64?: string;
}

const JSON_TYPE = /^\s*(application|text)\/([\w.+-]+\+)?json\s*(;|$)/i;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
const REFUSED_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
const PATH = /^(\/[\x21-\x7e]*)?$/;
const QUERY = /^[\x21-\x7e]*$/;
/** Headers only Weir writes: a handler's copy is dropped and Weir's kept (webhook-id), or added later (buildForwardRequest). */
const OWNED = new Set(['webhook-id', 'weir-verification', 'x-weir-request-id']);

function utf8(body: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return null;
  }
}

/** What the handler is called with, for `capture` forwarded with `method`. */
export function toSandboxInput(
  capture: CapturedMessage,
  method: string,
  ids: { endpointId: string; destinationId: string | null; receivedAt: Date | string | null },
): { request: SandboxRequest; context: SandboxContext } {
  const headers: Record<string, string> = {};
  let contentType = '';
  for (const [name, value] of capture.headers) {
    const lower = name.toLowerCase();
    headers[lower] = lower in headers ? `${headers[lower]}, ${value}` : value;
    if (lower === 'content-type') contentType = value;
  }
  const context: SandboxContext = {
    request_id: capture.id,
    capture_id: capture.id,
    endpoint_id: ids.endpointId,
    destination_id: ids.destinationId,
    received_at: ids.receivedAt === null ? null : new Date(ids.receivedAt).toISOString(),
  };
  const text = capture.body.length === 0 ? '' : utf8(capture.body);
  let body: unknown = text;
  if (text === null) context.body_base64 = capture.body.toString('base64');
  else if (text !== '' && JSON_TYPE.test(contentType)) {
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON after all: the text
    }
  }
  return { request: { method, path: capture.path, query: capture.query, headers, body }, context };
}

export type Applied = { ok: true; capture: CapturedMessage; method: string } | { ok: false; message: string };

const isPlain = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The captured message to send instead, from what the handler returned
 * (not null). Fields left out keep the original's; Weir's own headers
 * (webhook-id, Weir-Verification, X-Weir-Request-Id) are Weir's whatever the
 * handler returned.
 */
export function applyOutput(out: unknown, original: CapturedMessage, input: SandboxRequest, maxBodyBytes: number): Applied {
  const fail = (message: string): Applied => ({ ok: false, message });
  if (!isPlain(out)) return fail('handler must return an object {method, path, query, headers, body} or null');
  let method = input.method;
  if (out.method !== undefined) {
    if (typeof out.method !== 'string' || !TOKEN.test(out.method) || REFUSED_METHODS.has(out.method.toUpperCase())) {
      return fail('method must be an HTTP method name such as POST');
    }
    method = out.method;
  }
  let path = original.path;
  if (out.path !== undefined) {
    if (typeof out.path !== 'string' || !PATH.test(out.path) || /[?#]/.test(out.path) || out.path.length > 2048) {
      return fail('path must be "" or start with "/", without spaces, control characters, "?" or "#"');
    }
    path = out.path;
  }
  let query = original.query;
  if (out.query !== undefined && out.query !== null) {
    if (typeof out.query === 'string') query = out.query.replace(/^\?/, '');
    else if (isPlain(out.query)) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(out.query)) for (const one of Array.isArray(v) ? v : [v]) if (one != null) q.append(k, String(one));
      query = q.toString();
    } else return fail('query must be a string or an object');
    if (!QUERY.test(query) || query.includes('#')) return fail('query must not contain spaces, control characters or "#"');
  } else if (out.query === null) query = '';
  let headers: Array<[string, string]>;
  if (out.headers === undefined) headers = original.headers.map(([n, v]) => [n, v]);
  else {
    if (!isPlain(out.headers)) return fail('headers must be an object of names to string values');
    headers = [];
    for (const [name, value] of Object.entries(out.headers)) {
      if (!TOKEN.test(name)) return fail(`header name ${JSON.stringify(name.slice(0, 64))} is not a valid HTTP header name`);
      for (const one of Array.isArray(value) ? value : [value]) {
        if (one === null || one === undefined) continue;
        const v = typeof one === 'string' ? one : typeof one === 'number' || typeof one === 'boolean' ? String(one) : null;
        if (v === null) return fail(`header ${name} must have a string value`);
        if (/[\r\n\0]/.test(v)) return fail(`header ${name} contains a line break or NUL`);
        headers.push([name, v]);
      }
    }
  }
  headers = headers.filter(([name]) => !OWNED.has(name.toLowerCase()));
  // the capture's own webhook-id (or Weir's), whatever the handler did
  headers.push(['webhook-id', webhookIdOf(original)]);
  let body: Buffer;
  if (out.body === undefined || (out.body === null && input.body === null)) body = original.body;
  else if (out.body === null) body = Buffer.alloc(0);
  else if (typeof out.body === 'string') body = Buffer.from(out.body, 'utf8');
  else body = Buffer.from(JSON.stringify(out.body), 'utf8');
  if (body.length > maxBodyBytes) return fail(`the body is ${body.length} bytes, more than the body limit (${maxBodyBytes} bytes)`);
  return { ok: true, method, capture: { id: original.id, method, path, query, headers, body, verification: original.verification } };
}
