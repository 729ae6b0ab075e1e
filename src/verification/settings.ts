/**
 * An endpoint's `verification` setting (issue 25, docs/verification.md):
 * its rules, how it is stored (settings in endpoints.verification, the
 * secrets in their own columns), how it reads back (never the secret: its
 * last four characters) and the Verifier the ingest listener runs.
 */
import { HMAC_ALGORITHMS, HMAC_ENCODINGS, hmacKey, macAlgorithm, PROVIDERS, type HmacAlgorithm, type HmacEncoding, type Provider, type Verifier } from './verify.ts';

/** What a client sends. */
export interface VerificationInput {
  provider: Provider;
  secret?: string;
  enforce?: boolean;
  tolerance_seconds?: number;
  header?: string;
  algorithm?: HmacAlgorithm;
  encoding?: HmacEncoding;
  prefix?: string | null;
  previous_secret_expires_at?: string | null;
}

/** endpoints.verification (jsonb): the settings without any secret. */
export interface StoredVerification {
  provider: Provider;
  enforce: boolean;
  tolerance_seconds: number;
  header: string | null;
  algorithm: HmacAlgorithm | null;
  encoding: HmacEncoding | null;
  prefix: string | null;
}

/** What an endpoint read selects: the settings, the secret's last four characters and the overlap's end. */
export interface VerificationColumns {
  verification: StoredVerification | null;
  secret_last4: string | null;
  verification_previous_expires_at: Date | null;
}

/** The columns a write sets. */
export interface VerificationWrite {
  verification: StoredVerification | null;
  secret: string | null;
  previousSecret: string | null;
  previousExpiresAt: Date | null;
}

/** The current state a PATCH builds on (read under the row's lock). */
export interface CurrentVerification {
  provider: Provider | null;
  secret: string | null;
  previousSecret: string | null;
  previousExpiresAt: Date | null;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;
export const TOLERANCE_MAX_SECONDS = 86_400;
export const SECRET_MIN = 8;
export const SECRET_MAX = 1024;
/** How long a rotated-out secret may keep verifying. */
export const MAX_OVERLAP_DAYS = 30;
const PREFIX_MAX = 64;
const ALLOWED = new Set(['provider', 'secret', 'enforce', 'tolerance_seconds', 'header', 'algorithm', 'encoding', 'prefix', 'previous_secret_expires_at']);
const HMAC_ONLY = ['header', 'algorithm', 'encoding', 'prefix'] as const;
const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL_RE = /[\u0000-\u001f\u007f]/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
const WHSEC_RE = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const f = (name: string) => `Field "verification.${name}"`;

/**
 * Why `v` is not an acceptable `verification`, as a sentence naming the
 * field, or undefined. The rules that depend on what is stored (a secret is
 * needed unless one is kept) are planVerification's. Messages never echo the
 * secret.
 */
export function verificationProblem(v: unknown): string | undefined {
  if (v === null) return undefined;
  if (!isObject(v)) return 'Field "verification" must be an object {provider, secret, enforce, ...} or null.';
  for (const k of Object.keys(v)) if (!ALLOWED.has(k)) return `Field "verification" has an unknown property "${k.slice(0, 100)}" (allowed: ${[...ALLOWED].join(', ')}).`;
  const { provider, secret, enforce, tolerance_seconds: tolerance, previous_secret_expires_at: expires } = v;
  if (provider === undefined) return `${f('provider')} is required.`;
  if (typeof provider !== 'string' || !(PROVIDERS as readonly string[]).includes(provider)) return `${f('provider')} must be one of: ${PROVIDERS.join(', ')}.`;
  if (secret !== undefined) {
    if (typeof secret !== 'string') return `${f('secret')} must be a string.`;
    if (secret.length < SECRET_MIN || secret.length > SECRET_MAX) return `${f('secret')} must be ${SECRET_MIN}-${SECRET_MAX} characters long.`;
    if (CONTROL_RE.test(secret) || secret.trim() !== secret) return `${f('secret')} must not contain control characters or surrounding spaces.`;
    if (provider === 'standard_webhooks' && (!WHSEC_RE.test(secret) || keyBytes(provider, secret).length === 0)) return `${f('secret')} must be a Standard Webhooks secret: "whsec_" followed by base64.`;
  }
  if (enforce !== undefined && typeof enforce !== 'boolean') return `${f('enforce')} must be a boolean.`;
  if (tolerance !== undefined && (!Number.isInteger(tolerance) || (tolerance as number) < 1 || (tolerance as number) > TOLERANCE_MAX_SECONDS)) {
    return `${f('tolerance_seconds')} must be an integer 1-${TOLERANCE_MAX_SECONDS}.`;
  }
  if (provider === 'hmac') {
    const { header, algorithm, encoding, prefix } = v;
    if (header === undefined) return `${f('header')} is required for the hmac provider.`;
    if (typeof header !== 'string' || !TOKEN_RE.test(header) || header.length > 100) return `${f('header')} must be an HTTP header name.`;
    if (algorithm === undefined) return `${f('algorithm')} is required for the hmac provider.`;
    if (!(HMAC_ALGORITHMS as readonly unknown[]).includes(algorithm)) return `${f('algorithm')} must be one of: ${HMAC_ALGORITHMS.join(', ')}.`;
    if (encoding === undefined) return `${f('encoding')} is required for the hmac provider.`;
    if (!(HMAC_ENCODINGS as readonly unknown[]).includes(encoding)) return `${f('encoding')} must be one of: ${HMAC_ENCODINGS.join(', ')}.`;
    if (prefix !== undefined && prefix !== null && (typeof prefix !== 'string' || prefix.length > PREFIX_MAX || CONTROL_RE.test(prefix))) {
      return `${f('prefix')} must be a string of at most ${PREFIX_MAX} characters without control characters, or null.`;
    }
  } else {
    for (const k of HMAC_ONLY) if (v[k] !== undefined) return `${f(k)} applies only to the hmac provider.`;
  }
  if (expires !== undefined && expires !== null) {
    if (typeof expires !== 'string' || !ISO_TIMESTAMP.test(expires) || Number.isNaN(Date.parse(expires))) {
      return `${f('previous_secret_expires_at')} must be an ISO 8601 timestamp with a time zone, e.g. 2026-05-01T12:00:00Z, or null.`;
    }
    if (secret === undefined) return `${f('previous_secret_expires_at')} applies only with a new "verification.secret" (it keeps the old one valid until then).`;
  }
  return undefined;
}

/**
 * The columns to write for an accepted input, given what is stored: a
 * message when the combination is not acceptable. `null` removes
 * verification. A new secret with previous_secret_expires_at keeps the
 * current one verifying until then (rotation); a new secret without it
 * replaces the old one at once; no secret keeps the stored secrets, which
 * needs the provider to stay the same.
 */
export function planVerification(input: VerificationInput | null, current: CurrentVerification | null, nowMs = Date.now()): { ok: true; write: VerificationWrite } | { ok: false; message: string } {
  if (input === null) return { ok: true, write: { verification: null, secret: null, previousSecret: null, previousExpiresAt: null } };
  const stored: StoredVerification = {
    provider: input.provider,
    enforce: input.enforce ?? false,
    tolerance_seconds: input.tolerance_seconds ?? DEFAULT_TOLERANCE_SECONDS,
    header: input.provider === 'hmac' ? input.header!.toLowerCase() : null,
    algorithm: input.provider === 'hmac' ? input.algorithm! : null,
    encoding: input.provider === 'hmac' ? input.encoding! : null,
    prefix: input.provider === 'hmac' ? (input.prefix ?? null) || null : null,
  };
  const kept = current?.secret ?? null;
  if (input.secret === undefined) {
    if (kept === null || current?.provider !== input.provider) {
      return { ok: false, message: `${f('secret')} is required ${kept === null ? 'to set up verification' : 'when the provider changes'}.` };
    }
    return { ok: true, write: { verification: stored, secret: kept, previousSecret: current.previousSecret, previousExpiresAt: current.previousExpiresAt } };
  }
  const expires = input.previous_secret_expires_at;
  if (expires === undefined || expires === null) return { ok: true, write: { verification: stored, secret: input.secret, previousSecret: null, previousExpiresAt: null } };
  const at = Date.parse(expires);
  if (kept === null) return { ok: false, message: `${f('previous_secret_expires_at')} needs a secret to keep: this endpoint has none yet.` };
  if (at <= nowMs) return { ok: false, message: `${f('previous_secret_expires_at')} must be in the future.` };
  if (at > nowMs + MAX_OVERLAP_DAYS * 86_400_000) return { ok: false, message: `${f('previous_secret_expires_at')} must be at most ${MAX_OVERLAP_DAYS} days ahead.` };
  return { ok: true, write: { verification: stored, secret: input.secret, previousSecret: kept, previousExpiresAt: new Date(at) } };
}

/** The API's form: the settings, `secret_last4` instead of the secret, and the end of a running overlap (null when none). */
export function presentVerification(c: VerificationColumns, nowMs = Date.now()) {
  const v = c.verification;
  if (!v) return null;
  const expires = c.verification_previous_expires_at;
  return {
    provider: v.provider,
    enforce: v.enforce,
    tolerance_seconds: v.tolerance_seconds,
    header: v.header,
    algorithm: v.algorithm,
    encoding: v.encoding,
    prefix: v.prefix,
    secret_last4: c.secret_last4 ?? '',
    previous_secret_expires_at: expires && expires.getTime() > nowMs ? expires : null,
  };
}

/** The key bytes of a secret: a Standard Webhooks secret is base64 after "whsec_"; every other provider signs with the secret's UTF-8 bytes. */
function keyBytes(provider: Provider, secret: string): Buffer {
  return provider === 'standard_webhooks' ? Buffer.from(secret.slice(secret.startsWith('whsec_') ? 6 : 0), 'base64') : Buffer.from(secret, 'utf8');
}

/** The Verifier for an endpoint's stored setting, made once per ingest cache fill. */
export function prepareVerifier(
  v: StoredVerification,
  secret: string,
  previousSecret: string | null,
  previousExpiresAt: Date | null,
  ingestBase: string,
): Verifier {
  return {
    provider: v.provider,
    enforce: v.enforce,
    toleranceSeconds: v.tolerance_seconds,
    key: hmacKey(keyBytes(v.provider, secret), macAlgorithm(v.provider, v.algorithm)),
    previousKey: previousSecret === null ? null : hmacKey(keyBytes(v.provider, previousSecret), macAlgorithm(v.provider, v.algorithm)),
    previousExpiresAt: previousExpiresAt?.getTime() ?? null,
    header: v.header,
    algorithm: v.algorithm ?? 'sha256',
    encoding: v.encoding ?? 'hex',
    prefix: v.prefix,
    ingestBase: ingestBase.replace(/\/+$/, ''),
  };
}
