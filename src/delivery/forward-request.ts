/**
 * What a forward sends, built from the capture: the same method (or the
 * destination's override), the captured headers in their order and case
 * minus the hop-by-hop ones, and the body bytes untouched, so a signature
 * the sender computed (Stripe, GitHub, Shopify, Standard Webhooks) still
 * verifies at the destination.
 */

/** Headers that describe one connection, not the message (RFC 9110 7.6.1), plus those the client recomputes. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  // recomputed for the new connection and body framing
  'host',
  'content-length',
  // a 100-continue handshake belongs to the sender's connection, not ours
  'expect',
]);

export interface CapturedMessage {
  id: string;
  method: string;
  /** The path after /h/{slug}: '' or starting with '/'. */
  path: string;
  /** The raw query string without '?'. */
  query: string;
  headers: ReadonlyArray<readonly [string, string]>;
  body: Buffer;
  /** The endpoint's signature verification of it (src/verification); null or absent when it had none. */
  verification?: 'verified' | 'failed' | null;
}

export interface ForwardRequest {
  url: string;
  method: string;
  /** Flat [name, value, name, value, ...]: keeps order, case and duplicates. */
  headers: string[];
  body: Buffer;
  webhookId: string;
}

/**
 * The webhook-id a capture is forwarded with: the sender's own when it sent
 * one (Standard Webhooks signs it, so it must not change), else the capture
 * id. Either way it is the same for every retry and replay of the capture,
 * so a receiver can drop duplicates by it.
 */
export function webhookIdOf(capture: Pick<CapturedMessage, 'id' | 'headers'>): string {
  const own = capture.headers.find(([name]) => name.toLowerCase() === 'webhook-id');
  return own ? own[1] : `msg_${capture.id}`;
}

/**
 * The destination URL with the capture's sub-path and query appended:
 * a request to /h/{slug}/stripe?x=1 forwarded to https://app/hooks goes to
 * https://app/hooks/stripe?x=1. A capture on /h/{slug} itself goes to the
 * destination URL unchanged.
 */
export function targetUrl(destination: string, capture: Pick<CapturedMessage, 'path' | 'query'>): string {
  const u = new URL(destination);
  if (capture.path && capture.path !== '/') u.pathname = u.pathname.replace(/\/+$/, '') + capture.path;
  const base = u.toString();
  if (!capture.query) return base;
  const hash = base.indexOf('#');
  const head = hash >= 0 ? base.slice(0, hash) : base;
  return head + (u.search ? '&' : '?') + capture.query;
}

export function buildForwardRequest(capture: CapturedMessage, destinationUrl: string, methodOverride: string | null): ForwardRequest {
  // Connection may name further per-connection headers ("Connection: x-foo").
  const named = new Set<string>();
  for (const [name, value] of capture.headers) {
    if (name.toLowerCase() === 'connection') for (const t of value.split(',')) named.add(t.trim().toLowerCase());
  }
  const headers: string[] = [];
  for (const [name, value] of capture.headers) {
    const lower = name.toLowerCase();
    // Weir's own headers are Weir's to write: a sender's copy could claim a
    // verification that never happened.
    if (HOP_BY_HOP.has(lower) || named.has(lower) || lower === 'x-weir-request-id' || lower === 'weir-verification') continue;
    headers.push(name, value);
  }
  const webhookId = webhookIdOf(capture);
  if (!capture.headers.some(([name]) => name.toLowerCase() === 'webhook-id')) headers.push('webhook-id', webhookId);
  headers.push('x-weir-request-id', capture.id);
  // So a destination can trust Weir's check instead of repeating it (a
  // replayed Stripe request's timestamp may be too old for its own check).
  if (capture.verification) headers.push('Weir-Verification', capture.verification);
  return { url: targetUrl(destinationUrl, capture), method: methodOverride ?? capture.method, headers, body: capture.body, webhookId };
}
