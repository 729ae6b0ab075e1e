/**
 * The checks every piece of text a client sends passes before any route sees
 * it: JSON bodies (values and keys, at any depth), query strings and path
 * parameters. One hook (installInputGuard) runs them for every route, so no
 * route carries its own copy and a new route cannot forget them (issue 23,
 * defect 2: NUL characters reached PostgreSQL, which refuses them in text and
 * jsonb, and answered 500).
 *
 * - NUL (U+0000): PostgreSQL cannot store it in text or jsonb.
 * - Lone surrogates (half of a UTF-16 pair): not Unicode; they cannot be
 *   written as UTF-8, so they would be stored as U+FFFD, not as sent.
 * - Nesting deeper than MAX_DEPTH: no field of the API nests that deep, and
 *   walking such a document (JSON.stringify into jsonb, a filter) would
 *   exhaust the stack.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from './errors.ts';

export const MAX_DEPTH = 32;

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const PART: Record<string, (path: string) => string> = {
  body: (path) => (path ? `Field "${path}"` : 'The JSON body'),
  querystring: (path) => `Query parameter "${path}"`,
  params: (path) => `Path parameter "${path}"`,
};

function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which cannot be stored';
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate, which is not valid Unicode';
  return undefined;
}

/**
 * Why a decoded request part is refused (a sentence naming the field), or
 * undefined when it is acceptable. Iterative, so a deeply nested document
 * cannot overflow the stack of the check meant to refuse it.
 */
export function inputProblem(value: unknown, part: 'body' | 'querystring' | 'params'): string | undefined {
  const name = PART[part];
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem) return `${name(path)} ${problem}.`;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) return `${name(path)} nests deeper than ${MAX_DEPTH} levels.`;
    const entries: [string, unknown][] = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    for (const [key, item] of entries) {
      const at = path ? `${path}.${key}` : key;
      const keyProblem = textProblem(key);
      if (keyProblem) return `${name(path ? `${path}.(a key)` : '(a key)')} ${keyProblem}.`;
      stack.push({ v: item, path: at, depth: depth + 1 });
    }
  }
  return undefined;
}

/** Runs inputProblem on every request's body, query string and path parameters, before schema validation. */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const problem =
      inputProblem(request.params, 'params') ?? inputProblem(request.query, 'querystring') ?? inputProblem(request.body, 'body');
    if (problem) throw badRequest(problem);
  });
}
