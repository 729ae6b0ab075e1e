/**
 * Signature verification of one capture (issue 25, docs/verification.md):
 * each provider's scheme exactly as its documentation states it, over the
 * raw body bytes Weir stores. It runs in the ingest listener before the
 * capture statement (src/ingest/server.ts), on a Verifier prepared once per
 * endpoint cache fill, so a capture pays for the HMAC and nothing else.
 *
 * Every comparison of a signature is timingSafeEqual over the decoded bytes
 * (equal lengths first: a length is not a secret).
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { headerValues } from '../ingest/request-parts.ts';

import { PROVIDERS, type Provider, type VerificationStatus } from './providers.ts';

export { PROVIDERS, type Provider, type VerificationStatus };
export const REASONS = ['missing_signature', 'bad_signature', 'timestamp_out_of_tolerance', 'malformed_signature'] as const;
export type FailureReason = (typeof REASONS)[number];
export const HMAC_ALGORITHMS = ['sha1', 'sha256', 'sha512'] as const;
export type HmacAlgorithm = (typeof HMAC_ALGORITHMS)[number];
export const HMAC_ENCODINGS = ['hex', 'base64'] as const;
export type HmacEncoding = (typeof HMAC_ENCODINGS)[number];

export interface VerificationResult {
  status: VerificationStatus;
  reason: FailureReason | null;
}

/**
 * A secret prepared for HMAC (RFC 2104) once per endpoint cache fill: the
 * key XOR the inner and the outer pad, for the one digest its provider
 * signs with. See hmac() for why.
 */
export interface HmacKey {
  algorithm: HmacAlgorithm;
  innerPad: Buffer;
  outerPad: Buffer;
}

/** What the ingest listener holds for an endpoint with verification (prepared by settings.ts prepareVerifier). */
export interface Verifier {
  provider: Provider;
  enforce: boolean;
  toleranceSeconds: number;
  /** The current secret's key. */
  key: HmacKey;
  /** The previous secret's key while its overlap lasts (checked per capture: the cache may outlive the expiry). */
  previousKey: HmacKey | null;
  previousExpiresAt: number | null;
  /** hmac only. */
  header: string | null;
  algorithm: HmacAlgorithm;
  encoding: HmacEncoding;
  prefix: string | null;
  /** Twilio signs the URL it posted to: WEIR_INGEST_URL (or the derived address) up to /h/{slug}. */
  ingestBase: string;
}

/** The parts of a request a verifier reads. */
export interface SignedRequest {
  /** rawHeaders: [name, value, ...] as received. */
  rawHeaders: readonly string[];
  body: Buffer;
  slug: string;
  /** After /h/{slug}, as sent. */
  path: string;
  /** Raw query without '?'. */
  query: string;
}

const VERIFIED: VerificationResult = Object.freeze({ status: 'verified', reason: null });
const FAILED: Record<FailureReason, VerificationResult> = Object.freeze({
  missing_signature: Object.freeze({ status: 'failed', reason: 'missing_signature' }),
  bad_signature: Object.freeze({ status: 'failed', reason: 'bad_signature' }),
  timestamp_out_of_tolerance: Object.freeze({ status: 'failed', reason: 'timestamp_out_of_tolerance' }),
  malformed_signature: Object.freeze({ status: 'failed', reason: 'malformed_signature' }),
}) as Record<FailureReason, VerificationResult>;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const INTEGER = /^\d{1,15}$/;
const DIGEST_BYTES: Record<HmacAlgorithm, number> = { sha1: 20, sha256: 32, sha512: 64 };

/** A signature as bytes, or undefined when it is not in the encoding or not the digest's length. */
function decode(sig: string, encoding: HmacEncoding, algorithm: HmacAlgorithm): Buffer | undefined {
  const s = sig.trim();
  const size = DIGEST_BYTES[algorithm];
  if (encoding === 'hex') {
    // Buffer.from stops at the first pair that is not hex, so exactly
    // twice the digest's length in characters decoding to the digest's
    // length in bytes means every character was hex (no regex per capture).
    if (s.length !== size * 2) return undefined;
    const bytes = Buffer.from(s, 'hex');
    return bytes.length === size ? bytes : undefined;
  }
  if (!BASE64.test(s) || s.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(s, encoding);
  return bytes.length === size ? bytes : undefined;
}

const BLOCK_BYTES: Record<HmacAlgorithm, number> = { sha1: 64, sha256: 64, sha512: 128 };
// Messages up to this size are hashed in one call over a copy; larger ones
// stream through a hash object, whose set-up is small beside their hashing.
const ONE_SHOT_MAX_BYTES = 64 * 1024;

/** The digest a provider signs with: SHA-1 for Twilio, the configured one for generic HMAC, SHA-256 for the rest. */
export function macAlgorithm(provider: Provider, configured: HmacAlgorithm | null): HmacAlgorithm {
  return provider === 'twilio' ? 'sha1' : provider === 'hmac' ? (configured ?? 'sha256') : 'sha256';
}

/** A secret's key bytes padded as RFC 2104 says (a key longer than the digest's block is hashed first). */
export function hmacKey(secret: Buffer, algorithm: HmacAlgorithm): HmacKey {
  const block = BLOCK_BYTES[algorithm];
  const key = secret.length > block ? hash(algorithm, secret, 'buffer') : secret;
  const innerPad = Buffer.alloc(block, 0x36);
  const outerPad = Buffer.alloc(block, 0x5c);
  for (let i = 0; i < key.length; i++) {
    innerPad[i] ^= key[i];
    outerPad[i] ^= key[i];
  }
  return { algorithm, innerPad, outerPad };
}

/**
 * HMAC of the parts' concatenation (strings as UTF-8, as Hmac.update reads
 * them): H(outer pad || H(inner pad || message)), with the pads prepared
 * once per secret. Not createHmac: each call of it builds an OpenSSL HMAC
 * context (looking the digest up in OpenSSL's provider store) and a native
 * object for the garbage collector, which in the ingest listener, between
 * the HTTP parser and PGlite, cost the main thread several times what the
 * same call costs in a loop (docs/verification.md, Measured). crypto.hash
 * is one native call on a digest Node fetched once, with no object left
 * behind; its digests come back as hex, because a digest returned as a
 * Buffer is made by native code as an ArrayBuffer of its own, which the
 * collector then tracks.
 */
function hmac(key: HmacKey, parts: readonly (string | Buffer)[]): Buffer {
  const block = key.innerPad.length;
  let size = block;
  for (const p of parts) size += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.length;
  let inner: string;
  if (size <= ONE_SHOT_MAX_BYTES) {
    const message = Buffer.allocUnsafe(size);
    key.innerPad.copy(message, 0);
    let at = block;
    for (const p of parts) at += typeof p === 'string' ? message.write(p, at, 'utf8') : p.copy(message, at);
    inner = hash(key.algorithm, message, 'hex');
    wipePad(message, block);
  } else {
    const h = createHash(key.algorithm).update(key.innerPad);
    for (const p of parts) h.update(p);
    inner = h.digest('hex');
  }
  const outer = Buffer.allocUnsafe(block + inner.length / 2);
  key.outerPad.copy(outer, 0);
  outer.write(inner, block, 'hex');
  const digest = hash(key.algorithm, outer, 'hex');
  wipePad(outer, block);
  return Buffer.from(digest, 'hex');
}

/** The key-derived pad leaves no copy in the shared Buffer pool that allocUnsafe hands out again. */
function wipePad(buf: Buffer, block: number): void {
  buf.fill(0, 0, block);
}

/** The keys valid now: the current one, and the previous one until its overlap ends. */
function keysOf(v: Verifier, nowMs: number): HmacKey[] {
  return v.previousKey && v.previousExpiresAt !== null && nowMs < v.previousExpiresAt ? [v.key, v.previousKey] : [v.key];
}

/**
 * True when any candidate signature matches the HMAC of `parts` under any
 * valid key. Every pair is compared (no early exit on the first key), in
 * constant time each.
 */
function anyMatches(v: Verifier, nowMs: number, parts: readonly (string | Buffer)[], candidates: readonly Buffer[]): boolean {
  let ok = false;
  for (const key of keysOf(v, nowMs)) {
    const expected = hmac(key, parts);
    for (const c of candidates) if (c.length === expected.length && timingSafeEqual(c, expected)) ok = true;
  }
  return ok;
}

function first(raw: readonly string[], lowerName: string): string | undefined {
  return headerValues(raw, lowerName)[0];
}

function withinTolerance(v: Verifier, timestampSeconds: number, nowMs: number): boolean {
  return Math.abs(nowMs / 1000 - timestampSeconds) <= v.toleranceSeconds;
}

/** Stripe: `Stripe-Signature: t=...,v1=...[,v1=...]`, HMAC-SHA256 of `{t}.{body}`, hex. */
function stripe(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, 'stripe-signature');
  if (header === undefined) return FAILED.missing_signature;
  let t: string | undefined;
  const sigs: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const k = item.slice(0, eq).trim();
    const val = item.slice(eq + 1).trim();
    if (k === 't') t = val;
    else if (k === 'v1') {
      const bytes = decode(val, 'hex', 'sha256');
      if (!bytes) return FAILED.malformed_signature;
      sigs.push(bytes);
    }
  }
  if (t === undefined || !INTEGER.test(t) || sigs.length === 0) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, [t, '.', r.body], sigs)) return FAILED.bad_signature;
  return withinTolerance(v, Number(t), nowMs) ? VERIFIED : FAILED.timestamp_out_of_tolerance;
}

/** GitHub: `X-Hub-Signature-256: sha256={hex HMAC-SHA256 of the body}`. */
function github(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, 'x-hub-signature-256');
  if (header === undefined) return FAILED.missing_signature;
  const sig = header.startsWith('sha256=') ? decode(header.slice(7), 'hex', 'sha256') : undefined;
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, [r.body], [sig]) ? VERIFIED : FAILED.bad_signature;
}

/** Shopify: `X-Shopify-Hmac-Sha256: {base64 HMAC-SHA256 of the body}`. */
function shopify(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, 'x-shopify-hmac-sha256');
  if (header === undefined) return FAILED.missing_signature;
  const sig = decode(header, 'base64', 'sha256');
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, [r.body], [sig]) ? VERIFIED : FAILED.bad_signature;
}

/** Slack: `X-Slack-Signature: v0={hex HMAC-SHA256 of v0:{X-Slack-Request-Timestamp}:{body}}`. */
function slack(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, 'x-slack-signature');
  const ts = first(r.rawHeaders, 'x-slack-request-timestamp');
  if (header === undefined || ts === undefined) return FAILED.missing_signature;
  const sig = header.startsWith('v0=') ? decode(header.slice(3), 'hex', 'sha256') : undefined;
  const t = ts.trim();
  if (!sig || !INTEGER.test(t)) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, ['v0:', t, ':', r.body], [sig])) return FAILED.bad_signature;
  return withinTolerance(v, Number(t), nowMs) ? VERIFIED : FAILED.timestamp_out_of_tolerance;
}

/**
 * Standard Webhooks: base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`
 * under the base64-decoded `whsec_` secret; `webhook-signature` holds one or
 * more space-separated `v1,{sig}` (other versions are ignored).
 */
function standardWebhooks(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const id = first(r.rawHeaders, 'webhook-id');
  const ts = first(r.rawHeaders, 'webhook-timestamp');
  const header = first(r.rawHeaders, 'webhook-signature');
  if (id === undefined || ts === undefined || header === undefined) return FAILED.missing_signature;
  const t = ts.trim();
  if (!INTEGER.test(t)) return FAILED.malformed_signature;
  const sigs: Buffer[] = [];
  for (const item of header.split(' ')) {
    if (!item.startsWith('v1,')) continue;
    const bytes = decode(item.slice(3), 'base64', 'sha256');
    if (bytes) sigs.push(bytes);
  }
  if (sigs.length === 0) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, [id, '.', t, '.', r.body], sigs)) return FAILED.bad_signature;
  return withinTolerance(v, Number(t), nowMs) ? VERIFIED : FAILED.timestamp_out_of_tolerance;
}

/**
 * The URL Twilio posted to and signed: the ingest base address, /h/{slug},
 * the sub-path and query as sent. Twilio's own validator also accepts the
 * URL with the scheme's default port added or removed, and so does this.
 */
export function twilioUrls(base: string, r: Pick<SignedRequest, 'slug' | 'path' | 'query'>): string[] {
  const url = `${base}/h/${r.slug}${r.path}${r.query ? '?' + r.query : ''}`;
  const m = /^(https?):\/\/([^/:]+)(:\d+)?(.*)$/.exec(url);
  if (!m) return [url];
  const port = m[1] === 'https' ? ':443' : ':80';
  return m[3] === undefined ? [url, `${m[1]}://${m[2]}${port}${m[4]}`] : m[3] === port ? [url, `${m[1]}://${m[2]}${m[4]}`] : [url];
}

/**
 * Twilio: `X-Twilio-Signature`, base64 HMAC-SHA1 (auth token) of the full
 * URL followed by each form parameter's name and value, sorted by name
 * (a repeated name: its distinct values sorted, as Twilio's library does). A
 * request with a non-form body carries `bodySHA256` in its query instead:
 * the URL alone is signed and the body must hash to that value.
 */
function twilio(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, 'x-twilio-signature');
  if (header === undefined) return FAILED.missing_signature;
  const sig = decode(header, 'base64', 'sha1');
  if (!sig) return FAILED.malformed_signature;
  const bodyHash = new URLSearchParams(r.query).get('bodySHA256');
  let params = '';
  if (bodyHash !== null) {
    const actual = createHash('sha256').update(r.body).digest();
    const claimed = decode(bodyHash, 'hex', 'sha256');
    if (!claimed || !timingSafeEqual(claimed, actual)) return FAILED.bad_signature;
  } else if (/^application\/x-www-form-urlencoded\b/i.test(first(r.rawHeaders, 'content-type') ?? '')) {
    const form = new URLSearchParams(r.body.toString('utf8'));
    const names = [...new Set(form.keys())].sort();
    for (const name of names) for (const value of [...new Set(form.getAll(name))].sort()) params += name + value;
  }
  const ok = twilioUrls(v.ingestBase, r).some((url) => anyMatches(v, nowMs, [url, params], [sig]));
  return ok ? VERIFIED : FAILED.bad_signature;
}

/** Generic HMAC: the configured header holds `{prefix}{signature of the body}` in hex or base64. */
function genericHmac(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = first(r.rawHeaders, v.header!);
  if (header === undefined) return FAILED.missing_signature;
  const prefix = v.prefix ?? '';
  const sig = header.startsWith(prefix) ? decode(header.slice(prefix.length), v.encoding, v.algorithm) : undefined;
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, [r.body], [sig]) ? VERIFIED : FAILED.bad_signature;
}

const SCHEMES: Record<Provider, (v: Verifier, r: SignedRequest, nowMs: number) => VerificationResult> = {
  stripe,
  github,
  shopify,
  slack,
  standard_webhooks: standardWebhooks,
  twilio,
  hmac: genericHmac,
};

/** What the endpoint's verification says of this request. Never throws: anything unreadable is a failure with a reason. */
export function verifyRequest(v: Verifier, r: SignedRequest, nowMs = Date.now()): VerificationResult {
  return SCHEMES[v.provider](v, r, nowMs);
}
