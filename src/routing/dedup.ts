import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Queryable } from '../db/db.ts';

/**
 * Duplicate suppression (issue 26, docs/routing.md): an endpoint's
 * `deduplication` is null or {window_seconds, key}. A capture whose key was
 * first seen on the endpoint less than window_seconds earlier is stored
 * with duplicate_of = that first capture, acknowledged as usual, and not
 * forwarded. The decision is taken by the capture statement itself
 * (src/ingest/store.ts, capture_dedup_keys), so it holds across nodes.
 */
export type DedupKey = 'body' | { header: string } | { body_path: string };

export interface DedupSettings {
  window_seconds: number;
  key: DedupKey;
}

export const DEDUP_WINDOW_MAX_SECONDS = 3600;
const BODY_PATH_MAX = 256;
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;

/** Validates the setting: a message naming the offending field, or the normalized setting. */
export function parseDeduplication(v: unknown): { ok: true; value: DedupSettings | null } | { ok: false; message: string } {
  const bad = (message: string) => ({ ok: false, message }) as const;
  if (v === null) return { ok: true, value: null };
  if (typeof v !== 'object' || Array.isArray(v)) return bad('Field "deduplication" must be an object {window_seconds, key} or null.');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'window_seconds' && k !== 'key') return bad(`Field "deduplication.${k}" is not a deduplication setting; use window_seconds and key.`);
  const w = o.window_seconds;
  if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || w > DEDUP_WINDOW_MAX_SECONDS) {
    return bad(`Field "deduplication.window_seconds" must be an integer 1-${DEDUP_WINDOW_MAX_SECONDS}.`);
  }
  const key = o.key;
  if (key === 'body') return { ok: true, value: { window_seconds: w, key } };
  const keyProblem = 'Field "deduplication.key" must be "body", {"header": "<name>"} or {"body_path": "<dotted.path>"}.';
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return bad(keyProblem);
  const entries = Object.entries(key);
  if (entries.length !== 1) return bad(keyProblem);
  const [kind, value] = entries[0];
  if (kind === 'header') {
    if (typeof value !== 'string' || !HEADER_NAME_RE.test(value)) return bad('Field "deduplication.key.header" must be a header name.');
    return { ok: true, value: { window_seconds: w, key: { header: value.toLowerCase() } } };
  }
  if (kind === 'body_path') {
    if (typeof value !== 'string' || value.length === 0 || value.length > BODY_PATH_MAX || value.split('.').some((s) => s === '')) {
      return bad(`Field "deduplication.key.body_path" must be a dotted path such as "id" or "data.object.id" (at most ${BODY_PATH_MAX} characters).`);
    }
    return { ok: true, value: { window_seconds: w, key: { body_path: value } } };
  }
  return bad(keyProblem);
}

/**
 * The capture's key under the setting, as a SHA-256 hex digest, or null when
 * the capture has no key (the header is absent, the body is not JSON or has
 * nothing at the path): such a capture is never a duplicate. Runs on the
 * ingest path, for endpoints with deduplication only.
 */
export function dedupKeyHash(settings: DedupSettings, rawHeaders: readonly string[], body: Buffer): string | null {
  const key = settings.key;
  const h = createHash('sha256');
  if (key === 'body') {
    h.update('b:').update(body);
  } else if ('header' in key) {
    const value = headerValue(rawHeaders, key.header);
    if (value === undefined) return null;
    h.update('h:').update(value);
  } else {
    const value = atPath(body, key.body_path);
    if (value === undefined || value === null) return null;
    h.update('p:').update(typeof value === 'string' ? value : JSON.stringify(value));
  }
  return h.digest('hex');
}

function headerValue(raw: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === lowerName) return raw[i + 1];
  return undefined;
}

function atPath(body: Buffer, path: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  for (const part of path.split('.')) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/**
 * Deletes keys whose window closed some time ago (a minute of slack, so a
 * capture statement that read a key just before it expired is not racing
 * the delete). The table holds at most one window's worth of keys per
 * endpoint, whatever the history.
 */
export async function pruneDedupKeys(db: Queryable, limit = 10_000): Promise<number> {
  const { rowCount } = await db.query(
    `delete from capture_dedup_keys where ctid = any(array(
       select ctid from capture_dedup_keys where expires_at < now() - interval '1 minute' limit $1))`,
    [limit],
  );
  return rowCount;
}

const PRUNE_EVERY_MS = 10 * 60_000;

/** Prunes capture_dedup_keys every ten minutes (src/background/scheduler.ts): expired keys never pile up. */
export function startDedupPruning(db: Queryable, logger: Logger, loopMetrics?: LoopMetrics): { stop(): Promise<void> } {
  const loop = createLoop({
    name: 'dedup_prune',
    everyMs: PRUNE_EVERY_MS,
    metrics: loopMetrics,
    onError: (err) => logger.warn({ err }, 'pruning expired deduplication keys failed; retrying later'),
    async pass(signal) {
      let n = 0;
      for (let batch = 10_000; batch === 10_000 && !signal.aborted; ) {
        batch = await pruneDedupKeys(db);
        n += batch;
      }
      if (n > 0) logger.debug({ deleted: n }, 'pruned expired deduplication keys');
    },
  });
  loop.start();
  return { stop: () => loop.stop() };
}
