/**
 * An endpoint's custom ingest answer (issue 28 item 6): the status, headers
 * and body a capture answers instead of 200 {"request_id": ...}, so a user can
 * watch how a provider retries a 503 or follows a 410. It is still written
 * only after the capture commits (src/ingest/server.ts); refusals (404, 413,
 * 423, 503) keep their own answers.
 */

/** What a client sends and reads back. */
export interface IngestResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** As stored (endpoints.response, jsonb): pairs, because jsonb reorders object keys. */
export interface StoredIngestResponse {
  status: number;
  headers: [string, string][];
  body: string;
}

/** What the ingest listener writes, computed once per cache fill so a capture pays nothing extra. */
export interface PreparedIngestResponse {
  status: number;
  /** Flat [name, value, name, value, ...] as res.writeHead takes it, content-length included. */
  headers: string[];
  body: Buffer;
}

export const RESPONSE_BODY_MAX_BYTES = 64 * 1024;
export const RESPONSE_HEADERS_MAX = 50;
const HEADER_VALUE_MAX = 8192;

// Hop-by-hop headers (RFC 9110 7.6.1 and the ones proxies still honour)
// describe the connection, not the answer: letting a user set them would let
// an endpoint break keep-alive or framing for the sender. content-length is
// Weir's to write, from the body.
const REFUSED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
  'content-length',
]);
// RFC 9110 token, and the bytes Node accepts in a header value (anything else
// would throw inside writeHead: a 500 at capture time instead of a 400 now).
const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE_RE = /[^\t\x20-\x7e\x80-\xff]/;
// Statuses that carry no body by definition.
const BODILESS = new Set([204, 205, 304]);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Why `v` is not an acceptable `response`, as a sentence, or undefined. null (back to the default) is acceptable. */
export function ingestResponseProblem(v: unknown): string | undefined {
  if (v === null) return undefined;
  if (!isObject(v)) return 'Field "response" must be an object {status, headers, body} or null.';
  for (const k of Object.keys(v)) {
    if (k !== 'status' && k !== 'headers' && k !== 'body') return `Field "response" has an unknown property "${k}" (allowed: status, headers, body).`;
  }
  const { status, headers, body } = v;
  if (status === undefined) return 'Field "response.status" is required.';
  if (!Number.isInteger(status) || (status as number) < 200 || (status as number) > 599) return 'Field "response.status" must be an integer 200-599.';
  if (headers !== undefined) {
    if (!isObject(headers)) return 'Field "response.headers" must be an object of header names to string values.';
    const names = Object.keys(headers);
    if (names.length > RESPONSE_HEADERS_MAX) return `Field "response.headers" may hold at most ${RESPONSE_HEADERS_MAX} headers.`;
    const seen = new Set<string>();
    for (const name of names) {
      const lower = name.toLowerCase();
      if (!TOKEN_RE.test(name)) return `Header name "${name.slice(0, 100)}" in "response.headers" is not a valid HTTP header name.`;
      if (REFUSED_HEADERS.has(lower)) {
        return lower === 'content-length'
          ? 'Header "content-length" cannot be set in "response.headers": Weir writes it from the body.'
          : `Header "${name}" cannot be set in "response.headers": it is a hop-by-hop header, which describes the connection, not the answer.`;
      }
      if (seen.has(lower)) return `Header "${name}" appears twice in "response.headers" (names are case-insensitive).`;
      seen.add(lower);
      const value = headers[name];
      if (typeof value !== 'string') return `Header "${name}" in "response.headers" must have a string value.`;
      if (value.length > HEADER_VALUE_MAX) return `Header "${name}" in "response.headers" must be at most ${HEADER_VALUE_MAX} characters long.`;
      if (BAD_VALUE_RE.test(value)) return `Header "${name}" in "response.headers" holds a character a header value cannot (a line break, NUL or another control character).`;
    }
  }
  if (body !== undefined) {
    if (typeof body !== 'string') return 'Field "response.body" must be a string.';
    const bytes = Buffer.byteLength(body);
    if (bytes > RESPONSE_BODY_MAX_BYTES) return `Field "response.body" must be at most ${RESPONSE_BODY_MAX_BYTES} bytes (64 KB) in UTF-8; it is ${bytes}.`;
    if (body.includes('\u0000')) return 'Field "response.body" must not contain NUL characters.';
    if (body.length > 0 && BODILESS.has(status as number)) return `A ${status as number} answer has no body by definition: leave "response.body" empty or pick another status.`;
  }
  return undefined;
}

/** The stored form of an accepted value (check ingestResponseProblem first). */
export function storeIngestResponse(v: { status: number; headers?: Record<string, string>; body?: string } | null): StoredIngestResponse | null {
  if (v === null) return null;
  return { status: v.status, headers: Object.entries(v.headers ?? {}), body: v.body ?? '' };
}

/** The API's form of the stored value. */
export function presentIngestResponse(v: StoredIngestResponse | null): IngestResponse | null {
  if (v === null) return null;
  return { status: v.status, headers: Object.fromEntries(v.headers), body: v.body };
}

export function prepareIngestResponse(v: StoredIngestResponse): PreparedIngestResponse {
  const body = Buffer.from(v.body, 'utf8');
  const headers = v.headers.flat();
  // A 204 or 304 must not carry a content-length (RFC 9110 8.6).
  if (v.status !== 204 && v.status !== 304) headers.push('content-length', String(body.length));
  return { status: v.status, headers, body };
}
