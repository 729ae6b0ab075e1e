/**
 * Signature verification of one capture (issue 25, docs/verification.md):
 * each provider's scheme exactly as its documentation states it, over the
 * raw body bytes Weir stores. It runs in the ingest listener before the
 * capture statement (src/ingest/server.ts), on a Verifier prepared once per
 * endpoint cache fill, so a capture pays for the HMAC and nothing else.
 *
 * Every comparison of a signature runs in constant time: over the digest's
 * text as the provider encodes it (hex without regard to case, base64
 * exactly), every character compared, no early exit (equal lengths first:
 * a length is not a secret). The check makes no Buffer per capture and no
 * copy of a header name: in the ingest listener on PGlite every byte a
 * capture allocates brings the next scavenge of the young generation
 * closer, and each one copies what the pending captures hold alive, so
 * allocation there costs several times what it costs in a loop
 * (docs/verification.md, Measured).
 */
import { createHash, hash } from 'node:crypto';
import { headerValue } from '../ingest/request-parts.ts';

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
  /** The outer pad followed by room for the inner digest: the outer hash's whole message, written in place. */
  outer: Buffer;
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

/** Whether `text[from, to)` is a digest of `algorithm` in hex: its length, and hex digits only. */
function isHexDigest(text: string, from: number, to: number, algorithm: HmacAlgorithm): boolean {
  if (to - from !== 2 * DIGEST_BYTES[algorithm]) return false;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    const lower = c | 0x20;
    if (!((c >= 48 && c <= 57) || (lower >= 97 && lower <= 102))) return false;
  }
  return true;
}

/**
 * What String.prototype.trim removes, of the characters a header value can
 * hold (Node's parser gives header values as latin1: U+0000 to U+00FF).
 */
function trimmable(c: number): boolean {
  return (c >= 9 && c <= 13) || c === 32 || c === 0xa0;
}

/**
 * The signature as sent, trimmed, if it is a digest of `algorithm` in
 * `encoding`; undefined when malformed. Signatures are plain strings, their
 * encoding passed beside them: no object per signature.
 */
function signature(sig: string, encoding: HmacEncoding, algorithm: HmacAlgorithm): string | undefined {
  const text = sig.trim();
  const size = DIGEST_BYTES[algorithm];
  if (encoding === 'hex') return isHexDigest(text, 0, text.length, algorithm) ? text : undefined;
  return text.length === 4 * Math.ceil(size / 3) && BASE64.test(text) && Buffer.byteLength(text, 'base64') === size ? text : undefined;
}

/**
 * Whether a well-formed signature (`text`, in `encoding`) is the expected
 * digest (lower-case hex or base64, as crypto.hash writes them), in
 * constant time: every character is compared, hex letters without regard
 * to case.
 */
function sameDigest(text: string, encoding: HmacEncoding, expected: string, at = 0, length = text.length): boolean {
  if (length !== expected.length) return false;
  const fold = encoding === 'hex' ? 0x20 : 0;
  let diff = 0;
  for (let i = 0; i < length; i++) diff |= (text.charCodeAt(at + i) | fold) ^ expected.charCodeAt(i);
  return diff === 0;
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
  const outer = Buffer.alloc(block + DIGEST_BYTES[algorithm]);
  outerPad.copy(outer, 0);
  return { algorithm, innerPad, outer };
}

// The inner hash's message (the inner pad, then the signed parts), written
// here for every capture's check: the check is synchronous, so one use ends
// before the next begins. Not Buffer.allocUnsafe: its shared pool would
// hand the key-derived pad to other code, and each call makes a Buffer.
let message = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * What a provider signs: up to five parts, concatenated (strings as UTF-8,
 * as Hmac.update reads them). Passed as arguments, not in an array, so a
 * check makes none.
 */
type Part = string | Buffer | undefined;

/** At least the bytes a part takes (a string's UTF-8 takes at most 3 a UTF-16 unit), so counting it needs no pass over it. */
function partBound(p: Part): number {
  return p === undefined ? 0 : typeof p === 'string' ? 3 * p.length : p.length;
}

function writePart(p: Part, at: number): number {
  if (p === undefined) return 0;
  if (typeof p !== 'string') return p.copy(message, at);
  // The short ASCII parts (a timestamp, a '.') byte by byte: a native write costs more than they do.
  if (p.length > 32) return message.write(p, at, 'utf8');
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c > 127) return message.write(p, at, 'utf8');
    message[at + i] = c;
  }
  return p.length;
}

/**
 * HMAC of the parts' concatenation: H(outer pad || H(inner pad || message)),
 * with the pads prepared once per secret, as text in `encoding`. Not
 * createHmac: each call of it builds an OpenSSL HMAC context (looking the
 * digest up in OpenSSL's provider store) and a native object for the
 * garbage collector. crypto.hash is one native call on a digest Node
 * fetched once; the inner digest comes back as latin1 ('binary') text (a
 * character a byte, the smallest string) and is written into the key's
 * outer message, and the outer digest comes back as text, so no Buffer is
 * made.
 */
function hmac(key: HmacKey, encoding: HmacEncoding, a: Part, b?: Part, c?: Part, d?: Part, e?: Part): string {
  const block = key.innerPad.length;
  const bound = block + partBound(a) + partBound(b) + partBound(c) + partBound(d) + partBound(e);
  let inner: string;
  if (bound <= ONE_SHOT_MAX_BYTES) {
    if (message.length < bound) message = Buffer.allocUnsafeSlow(ONE_SHOT_MAX_BYTES);
    key.innerPad.copy(message, 0);
    let at = block;
    at += writePart(a, at);
    at += writePart(b, at);
    at += writePart(c, at);
    at += writePart(d, at);
    at += writePart(e, at);
    inner = hash(key.algorithm, message.subarray(0, at), 'binary');
  } else {
    const h = createHash(key.algorithm).update(key.innerPad);
    for (const p of [a, b, c, d, e]) if (p !== undefined) h.update(p);
    inner = h.digest('binary');
  }
  key.outer.write(inner, block, 'latin1');
  return hash(key.algorithm, key.outer, encoding);
}

/** Whether any candidate is the HMAC of the parts under `key`; every candidate is compared. */
function matchesUnder(key: HmacKey, candidates: Candidates, a: Part, b?: Part, c?: Part, d?: Part, e?: Part): boolean {
  const expected = hmac(key, candidates.encoding, a, b, c, d, e);
  let ok = false;
  for (let i = 0; i < candidates.count; i++) {
    if (sameDigest(candidates.texts[i], candidates.encoding, expected, candidates.at[i], candidates.lengths[i])) ok = true;
  }
  return ok;
}

/**
 * The signatures a request carries, in one encoding, gathered by a scheme
 * and read by anyMatches. One set, reused by every check (a check is
 * synchronous, and cleared at its end): no array per capture.
 */
interface Candidates {
  encoding: HmacEncoding;
  /** Each signature is texts[i] from at[i], lengths[i] characters: a Stripe header's are compared where they lie in it. */
  texts: string[];
  at: number[];
  lengths: number[];
  count: number;
}
const candidates: Candidates = { encoding: 'hex', texts: [], at: [], lengths: [], count: 0 };

/** Starts gathering a check's signatures in `encoding`. */
function gather(encoding: HmacEncoding): Candidates {
  candidates.encoding = encoding;
  candidates.count = 0;
  return candidates;
}

function add(set: Candidates, text: string): void {
  addAt(set, text, 0, text.length);
}

/** A signature that is `length` characters of `text` from `at`. */
function addAt(set: Candidates, text: string, at: number, length: number): void {
  set.texts[set.count] = text;
  set.at[set.count] = at;
  set.lengths[set.count++] = length;
}

/** A check's one signature. */
function only(text: string, encoding: HmacEncoding): Candidates {
  const set = gather(encoding);
  add(set, text);
  return set;
}

/**
 * True when any candidate signature matches the HMAC of the parts under a
 * valid key: the current one, and the previous one until its overlap ends
 * (checked per capture: the cache may outlive the expiry). Every pair is
 * compared, no early exit on the first key. Empties the candidates (they
 * must not keep a request's strings alive).
 */
function anyMatches(v: Verifier, nowMs: number, set: Candidates, a: Part, b?: Part, c?: Part, d?: Part, e?: Part): boolean {
  const current = matchesUnder(v.key, set, a, b, c, d, e);
  const previous = v.previousKey !== null && v.previousExpiresAt !== null && nowMs < v.previousExpiresAt && matchesUnder(v.previousKey, set, a, b, c, d, e);
  set.texts.fill('');
  set.count = 0;
  return current || previous;
}

function withinTolerance(v: Verifier, timestampSeconds: number, nowMs: number): boolean {
  return Math.abs(nowMs / 1000 - timestampSeconds) <= v.toleranceSeconds;
}

/** Stripe: `Stripe-Signature: t=...,v1=...[,v1=...]`, HMAC-SHA256 of `{t}.{body}`, hex. */
function stripe(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = headerValue(r.rawHeaders, 'stripe-signature');
  if (header === undefined) return FAILED.missing_signature;
  // Items are read in place (keys and signatures are compared where they
  // lie; only `t` is cut out), the last `t` counting, as a split would have it.
  let t: string | undefined;
  const sigs = gather('hex');
  for (let start = 0; start <= header.length; ) {
    let end = header.indexOf(',', start);
    if (end < 0) end = header.length;
    const eq = header.indexOf('=', start);
    if (eq >= 0 && eq < end) {
      const key = keyOf(header, start, eq);
      if (key === 't') t = header.slice(eq + 1, end).trim();
      else if (key === 'v1') {
        let from = eq + 1;
        let to = end;
        while (from < to && trimmable(header.charCodeAt(from))) from++;
        while (to > from && trimmable(header.charCodeAt(to - 1))) to--;
        if (!isHexDigest(header, from, to, 'sha256')) return FAILED.malformed_signature;
        addAt(sigs, header, from, to - from);
      }
    }
    start = end + 1;
  }
  if (t === undefined || !INTEGER.test(t) || sigs.count === 0) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, sigs, t, '.', r.body)) return FAILED.bad_signature;
  return withinTolerance(v, Number(t), nowMs) ? VERIFIED : FAILED.timestamp_out_of_tolerance;
}

/** Which of Stripe's keys `header[from, to)` is, spaces around it ignored: 't', 'v1' or null (any other). */
function keyOf(header: string, from: number, to: number): 't' | 'v1' | null {
  while (from < to && header.charCodeAt(from) <= 32) from++;
  while (to > from && header.charCodeAt(to - 1) <= 32) to--;
  if (to - from === 1 && header.charCodeAt(from) === 116) return 't';
  if (to - from === 2 && header.charCodeAt(from) === 118 && header.charCodeAt(from + 1) === 49) return 'v1';
  return null;
}

/** GitHub: `X-Hub-Signature-256: sha256={hex HMAC-SHA256 of the body}`. */
function github(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = headerValue(r.rawHeaders, 'x-hub-signature-256');
  if (header === undefined) return FAILED.missing_signature;
  const sig = header.startsWith('sha256=') ? signature(header.slice(7), 'hex', 'sha256') : undefined;
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, only(sig, 'hex'), r.body) ? VERIFIED : FAILED.bad_signature;
}

/** Shopify: `X-Shopify-Hmac-Sha256: {base64 HMAC-SHA256 of the body}`. */
function shopify(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = headerValue(r.rawHeaders, 'x-shopify-hmac-sha256');
  if (header === undefined) return FAILED.missing_signature;
  const sig = signature(header, 'base64', 'sha256');
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, only(sig, 'base64'), r.body) ? VERIFIED : FAILED.bad_signature;
}

/** Slack: `X-Slack-Signature: v0={hex HMAC-SHA256 of v0:{X-Slack-Request-Timestamp}:{body}}`. */
function slack(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = headerValue(r.rawHeaders, 'x-slack-signature');
  const ts = headerValue(r.rawHeaders, 'x-slack-request-timestamp');
  if (header === undefined || ts === undefined) return FAILED.missing_signature;
  const sig = header.startsWith('v0=') ? signature(header.slice(3), 'hex', 'sha256') : undefined;
  const t = ts.trim();
  if (!sig || !INTEGER.test(t)) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, only(sig, 'hex'), 'v0:', t, ':', r.body)) return FAILED.bad_signature;
  return withinTolerance(v, Number(t), nowMs) ? VERIFIED : FAILED.timestamp_out_of_tolerance;
}

/**
 * Standard Webhooks: base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`
 * under the base64-decoded `whsec_` secret; `webhook-signature` holds one or
 * more space-separated `v1,{sig}` (other versions are ignored).
 */
function standardWebhooks(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const id = headerValue(r.rawHeaders, 'webhook-id');
  const ts = headerValue(r.rawHeaders, 'webhook-timestamp');
  const header = headerValue(r.rawHeaders, 'webhook-signature');
  if (id === undefined || ts === undefined || header === undefined) return FAILED.missing_signature;
  const t = ts.trim();
  if (!INTEGER.test(t)) return FAILED.malformed_signature;
  const sigs = gather('base64');
  for (const item of header.split(' ')) {
    if (!item.startsWith('v1,')) continue;
    const sig = signature(item.slice(3), 'base64', 'sha256');
    if (sig) add(sigs, sig);
  }
  if (sigs.count === 0) return FAILED.malformed_signature;
  if (!anyMatches(v, nowMs, sigs, id, '.', t, '.', r.body)) return FAILED.bad_signature;
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
  const header = headerValue(r.rawHeaders, 'x-twilio-signature');
  if (header === undefined) return FAILED.missing_signature;
  const sig = signature(header, 'base64', 'sha1');
  if (!sig) return FAILED.malformed_signature;
  const bodyHash = new URLSearchParams(r.query).get('bodySHA256');
  let params = '';
  if (bodyHash !== null) {
    const claimed = signature(bodyHash, 'hex', 'sha256');
    if (!claimed || !sameDigest(claimed, 'hex', hash('sha256', r.body, 'hex'))) return FAILED.bad_signature;
  } else if (/^application\/x-www-form-urlencoded\b/i.test(headerValue(r.rawHeaders, 'content-type') ?? '')) {
    const form = new URLSearchParams(r.body.toString('utf8'));
    const names = [...new Set(form.keys())].sort();
    for (const name of names) for (const value of [...new Set(form.getAll(name))].sort()) params += name + value;
  }
  const ok = twilioUrls(v.ingestBase, r).some((url) => anyMatches(v, nowMs, only(sig, 'base64'), url, params));
  return ok ? VERIFIED : FAILED.bad_signature;
}

/** Generic HMAC: the configured header holds `{prefix}{signature of the body}` in hex or base64. */
function genericHmac(v: Verifier, r: SignedRequest, nowMs: number): VerificationResult {
  const header = headerValue(r.rawHeaders, v.header!);
  if (header === undefined) return FAILED.missing_signature;
  const prefix = v.prefix ?? '';
  const sig = header.startsWith(prefix) ? signature(header.slice(prefix.length), v.encoding, v.algorithm) : undefined;
  if (!sig) return FAILED.malformed_signature;
  return anyMatches(v, nowMs, only(sig, v.encoding), r.body) ? VERIFIED : FAILED.bad_signature;
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
