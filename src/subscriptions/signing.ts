import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is
 * `whsec_` and base64 of 24 random bytes; a signature is
 * `v1,` + base64(HMAC-SHA256(key, `${webhook-id}.${webhook-timestamp}.${body}`)).
 * Several signatures go space-separated in one header, which is how a
 * rotation's overlap signs with the old and the new secret at once.
 */
export const SECRET_PREFIX = 'whsec_';

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export function sign(secret: string, msgId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64');
}

/** The headers of one delivery attempt: a fresh timestamp per attempt, the same id for every retry. */
export function signedHeaders(secrets: readonly string[], msgId: string, body: string, now = Date.now()): Array<[string, string]> {
  const timestamp = Math.floor(now / 1000);
  return [
    ['content-type', 'application/json'],
    ['user-agent', 'Weir-Webhooks/1'],
    ['webhook-id', msgId],
    ['webhook-timestamp', String(timestamp)],
    ['webhook-signature', secrets.map((s) => sign(s, msgId, timestamp, body)).join(' ')],
  ];
}
