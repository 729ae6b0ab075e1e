import type { IncomingMessage } from 'node:http';
import { SLUG_PATTERN } from '../endpoints/slug.ts';

export interface IngestTargetParts {
  slug: string;
  /** '' or starting with '/', exactly as sent. */
  path: string;
  /** Raw query string without '?', '' when absent. */
  query: string;
}

/**
 * Splits a request target into slug, sub-path and raw query without decoding
 * anything, or undefined when it is not an ingestion URL (/h/{slug} or
 * /h/{slug}/...). An absolute-form target (`GET http://host/h/...`, sent to
 * proxies) is reduced to its path first.
 */
export function parseTarget(url: string | undefined): IngestTargetParts | undefined {
  if (!url) return undefined;
  let target = url;
  if (target[0] !== '/') {
    const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?]*/i.exec(target);
    if (!m) return undefined;
    target = target.slice(m[0].length) || '/';
  }
  const q = target.indexOf('?');
  const pathPart = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q + 1);
  if (!pathPart.startsWith('/h/')) return undefined;
  const slash = pathPart.indexOf('/', 3);
  const slug = slash === -1 ? pathPart.slice(3) : pathPart.slice(3, slash);
  if (!SLUG_PATTERN.test(slug)) return undefined;
  return { slug, path: slash === -1 ? '' : pathPart.slice(slash), query };
}

/** rawHeaders as [name, value] pairs: arrival order, original case, duplicates kept (req.headers merges or drops some). */
export function headerPairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = new Array(raw.length / 2);
  for (let i = 0; i < raw.length; i += 2) out[i / 2] = [raw[i], raw[i + 1]];
  return out;
}

/** Every value of one header (case-insensitive name), in order. */
export function headerValues(raw: readonly string[], lowerName: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (sameHeaderName(raw[i], lowerName)) out.push(raw[i + 1]);
  return out;
}

/** The first value of one header (case-insensitive name), or undefined. */
export function headerValue(raw: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (sameHeaderName(raw[i], lowerName)) return raw[i + 1];
  return undefined;
}

/**
 * Whether a header name is `lower` in any case, compared where it lies (no
 * lower-cased copy of every name on the ingest path). Names are ASCII:
 * Node's HTTP parser accepts nothing else in a header name.
 */
function sameHeaderName(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 65 && c <= 90 ? c | 0x20 : c) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too_large' | 'aborted' };

/**
 * Reads the body, giving up as soon as it passes `max` bytes, so a chunked
 * upload without Content-Length cannot make us buffer more than the limit.
 * (A declared Content-Length over the limit is refused before reading.)
 */
export function readBody(req: IncomingMessage, max: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyResult) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        chunks.length = 0;
        finish({ ok: false, reason: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => finish({ ok: true, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size) }));
    req.once('aborted', () => finish({ ok: false, reason: 'aborted' }));
    req.once('close', () => finish({ ok: false, reason: 'aborted' }));
  });
}
