/**
 * Routing filters (issue 26, docs/routing.md): which captures a forward
 * destination receives. A filter is `null` (everything) or an object with
 * any of `headers`, `path`, `query`, `body`, in the syntax Hookdeck's and
 * Convoy's users know:
 * - a plain value means equality (strict: the number 1 is not the string "1");
 * - a nested object matches a subset of the request's object;
 * - an array value in the request matches when an element matches (so
 *   `{"tags": "a"}` matches `"tags": ["a", "b"]`);
 * - an array in the filter matches a request array holding a match for
 *   each of its elements;
 * - operators: $eq $neq $gt $gte $lt $lte $in $nin $startsWith $endsWith
 *   $contains $exist $and $or $not.
 *
 * A filter is validated once when it is written (validateFilter: every
 * problem names its path) and compiled once per destination version
 * (compileFilter); evaluation explains the first rule that failed.
 *
 * Bounds: at most FILTER_MAX_BYTES of JSON and FILTER_MAX_DEPTH levels of
 * nesting, so a compiled filter has at most ~64 K nodes; evaluation visits
 * each (filter node, request value) pair at most once, which bounds its
 * CPU by the filter's size times the request's size, with no regular
 * expression and no recursion beyond FILTER_MAX_DEPTH.
 */

export const FILTER_MAX_BYTES = 64 * 1024;
export const FILTER_MAX_DEPTH = 10;
export const FILTER_FIELDS = ['headers', 'path', 'query', 'body'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

export const FILTER_OPERATORS = [
  '$eq', '$neq', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$startsWith', '$endsWith', '$contains', '$exist', '$and', '$or', '$not',
] as const;
type Operator = (typeof FILTER_OPERATORS)[number];
const OPERATORS = new Set<string>(FILTER_OPERATORS);

/** The request as filters see it; `body` is undefined when it is neither JSON nor a form. */
export interface FilterInput {
  headers: Record<string, string | string[]>;
  path: string;
  query: Record<string, string | string[]>;
  body: unknown;
  /** false: the body is neither JSON nor form data, and any filter on `body` fails. */
  bodyParsed: boolean;
}

export interface Verdict {
  matches: boolean;
  /** Why it did not match (the first rule that failed); null when it matched. */
  reason: string | null;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------
// Validation

/** Undefined when `filter` is a valid filter (or null), else a message naming the offending part's path. */
export function validateFilter(filter: unknown, field = 'filter'): string | undefined {
  if (filter === null) return undefined;
  if (!isObject(filter)) return `Field "${field}" must be an object with any of ${FILTER_FIELDS.join(', ')}, or null.`;
  const size = Buffer.byteLength(JSON.stringify(filter));
  if (size > FILTER_MAX_BYTES) return `Field "${field}" is ${size} bytes of JSON; a filter may be at most ${FILTER_MAX_BYTES} bytes (64 KB).`;
  return rootProblem(filter, field, 1);
}

function rootProblem(filter: Record<string, unknown>, path: string, depth: number): string | undefined {
  if (depth > FILTER_MAX_DEPTH) return tooDeep(path);
  for (const [k, v] of Object.entries(filter)) {
    const p = `${path}.${k}`;
    if (k === '$and' || k === '$or') {
      if (!Array.isArray(v) || v.length === 0) return `Field "${p}" must be a non-empty array of filters.`;
      for (let i = 0; i < v.length; i++) {
        if (!isObject(v[i])) return `Field "${p}[${i}]" must be an object with any of ${FILTER_FIELDS.join(', ')}.`;
        const problem = rootProblem(v[i], `${p}[${i}]`, depth + 2);
        if (problem) return problem;
      }
    } else if (k === '$not') {
      if (!isObject(v)) return `Field "${p}" must be an object with any of ${FILTER_FIELDS.join(', ')}.`;
      const problem = rootProblem(v, p, depth + 1);
      if (problem) return problem;
    } else if (k.startsWith('$')) {
      return `Field "${p}": ${OPERATORS.has(k) ? `${k} cannot apply to the whole request; use it inside headers, path, query or body` : `unknown operator ${k}`}.`;
    } else if (!(FILTER_FIELDS as readonly string[]).includes(k)) {
      return `Field "${p}": unknown part "${k}"; a filter may have ${FILTER_FIELDS.join(', ')}.`;
    } else {
      const problem = valueProblem(v, p, depth + 1);
      if (problem) return problem;
    }
  }
  return undefined;
}

function tooDeep(path: string): string {
  return `Field "${path}" is nested more than ${FILTER_MAX_DEPTH} levels deep; a filter may have at most ${FILTER_MAX_DEPTH}.`;
}

function valueProblem(v: unknown, path: string, depth: number): string | undefined {
  if (depth > FILTER_MAX_DEPTH && (isObject(v) || Array.isArray(v))) return tooDeep(path);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const problem = valueProblem(v[i], `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isObject(v)) return undefined;
  for (const [k, operand] of Object.entries(v)) {
    const p = `${path}.${k}`;
    if (!k.startsWith('$')) {
      const problem = valueProblem(operand, p, depth + 1);
      if (problem) return problem;
      continue;
    }
    if (!OPERATORS.has(k)) return `Field "${p}": unknown operator ${k}; operators are ${FILTER_OPERATORS.join(', ')}.`;
    const problem = operandProblem(k as Operator, operand, p, depth);
    if (problem) return problem;
  }
  return undefined;
}

function operandProblem(op: Operator, operand: unknown, p: string, depth: number): string | undefined {
  switch (op) {
    case '$eq':
    case '$neq':
      return valueProblem(operand, p, depth + 1);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return typeof operand === 'number' || typeof operand === 'string' ? undefined : `Field "${p}": ${op} takes a number or a string.`;
    case '$in':
    case '$nin':
      if (!Array.isArray(operand)) return `Field "${p}": ${op} takes an array of values.`;
      return valueProblem(operand, p, depth + 1);
    case '$startsWith':
    case '$endsWith':
    case '$contains':
      return typeof operand === 'string' ? undefined : `Field "${p}": ${op} takes a string.`;
    case '$exist':
      return typeof operand === 'boolean' ? undefined : `Field "${p}": $exist takes true or false.`;
    case '$and':
    case '$or':
      if (!Array.isArray(operand) || operand.length === 0) return `Field "${p}": ${op} takes a non-empty array of conditions.`;
      if (depth + 1 > FILTER_MAX_DEPTH) return tooDeep(p);
      for (let i = 0; i < operand.length; i++) {
        const problem = valueProblem(operand[i], `${p}[${i}]`, depth + 2);
        if (problem) return problem;
      }
      return undefined;
    case '$not':
      if (operand === undefined) return `Field "${p}": $not takes a condition.`;
      return valueProblem(operand, p, depth + 1);
  }
}

// ---------------------------------------------------------------------------
// Compilation and evaluation

/** Checks one value of the request (undefined: missing); answers null on a match, else the reason. */
type Check = (actual: unknown) => string | null;

/** A compiled filter: evaluate it with evaluate(). */
export interface CompiledFilter {
  /** null: every request matches. */
  readonly check: ((input: FilterInput) => string | null) | null;
  /** Whether the filter looks at the body at all (if not, the body is never parsed). */
  readonly usesBody: boolean;
}

export const MATCH_ALL: CompiledFilter = { check: null, usesBody: false };

/** Compiles a filter that validateFilter accepted (a stored one); null compiles to "forward everything". */
export function compileFilter(filter: unknown): CompiledFilter {
  if (filter === null || filter === undefined) return MATCH_ALL;
  if (!isObject(filter)) throw new Error('not a filter');
  const usesBody = JSON.stringify(filter).includes('"body"');
  return { check: compileRoot(filter), usesBody };
}

function compileRoot(filter: Record<string, unknown>): (input: FilterInput) => string | null {
  const parts: Array<(input: FilterInput) => string | null> = [];
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$and' || k === '$or') {
      const branches = (v as Record<string, unknown>[]).map(compileRoot);
      parts.push(k === '$and' ? (input) => firstFailure(branches, input) : (input) => anyOf(branches, input, '(request)'));
    } else if (k === '$not') {
      const inner = compileRoot(v as Record<string, unknown>);
      parts.push((input) => (inner(input) === null ? `(request): expected $not ${show(v)} to fail, it matched` : null));
    } else if (k === 'body') {
      const check = compileValue(v, 'body', false);
      parts.push((input) => (input.bodyParsed ? check(input.body) : 'body: not JSON or form data, so no rule on the body can match'));
    } else {
      const field = k as Exclude<FilterField, 'body'>;
      const check = compileValue(v, field, field === 'headers');
      parts.push((input) => check(input[field]));
    }
  }
  return (input) => firstFailure(parts, input);
}

function firstFailure<T>(checks: Array<(x: T) => string | null>, x: T): string | null {
  for (const c of checks) {
    const r = c(x);
    if (r !== null) return r;
  }
  return null;
}

function anyOf<T>(checks: Array<(x: T) => string | null>, x: T, path: string): string | null {
  let first: string | null = null;
  for (const c of checks) {
    const r = c(x);
    if (r === null) return null;
    first ??= r;
  }
  return `${path}: no $or condition matched (first: ${first})`;
}

/**
 * Compiles the condition `f` on the request value at `path`. `lowerKeys`:
 * the object's field names are matched case-insensitively (headers, whose
 * names the input carries in lower case).
 */
function compileValue(f: unknown, path: string, lowerKeys: boolean): Check {
  if (Array.isArray(f)) {
    const elements = f.map((e, i) => compileValue(e, `${path}[${i}]`, false));
    return (actual) => {
      if (!Array.isArray(actual)) return `${path}: expected an array containing ${show(f)} got ${show(actual)}`;
      for (let i = 0; i < elements.length; i++) {
        if (!actual.some((a) => elements[i](a) === null)) return `${path}: expected an array containing ${show(f[i])} got ${show(actual)}`;
      }
      return null;
    };
  }
  if (!isObject(f)) return equalityCheck(f as Json, path);
  const checks: Check[] = [];
  for (const [rawKey, operand] of Object.entries(f)) {
    if (rawKey.startsWith('$')) {
      checks.push(compileOperator(rawKey as Operator, operand, path, lowerKeys));
      continue;
    }
    const key = lowerKeys ? rawKey.toLowerCase() : rawKey;
    const sub = compileValue(operand, `${path}.${rawKey}`, false);
    checks.push(fieldCheck(key, sub, `${path}.${rawKey}`));
  }
  return (actual) => {
    for (const c of checks) {
      const r = c(actual);
      if (r !== null) return r;
    }
    return null;
  };
}

/** The subset rule: the request value is an object with a matching field, or an array with such an element. */
function fieldCheck(key: string, sub: Check, path: string): Check {
  const one = (actual: unknown): string | null => {
    if (isObject(actual)) return sub(Object.hasOwn(actual, key) ? actual[key] : undefined);
    return sub(undefined);
  };
  return (actual) => {
    if (!Array.isArray(actual)) return one(actual);
    let first: string | null = null;
    for (const a of actual) {
      const r = one(a);
      if (r === null) return null;
      first ??= r;
    }
    return first ?? `${path}: expected a value, got an empty array`;
  };
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Equality, where a request array matches when an element is equal (and an equal array matches too). */
function equals(actual: unknown, v: unknown): boolean {
  if (deepEqual(actual, v)) return true;
  return Array.isArray(actual) && actual.some((a) => deepEqual(a, v));
}

function equalityCheck(v: Json, path: string): Check {
  return (actual) => (equals(actual, v) ? null : `${path}: expected ${show(v)} got ${show(actual)}`);
}

/** Applies `test` to the value, or to each element of an array value (a match on any element matches). */
function scalarTest(actual: unknown, test: (a: unknown) => boolean): boolean {
  if (Array.isArray(actual)) return actual.some(test);
  return test(actual);
}

function compare(op: '$gt' | '$gte' | '$lt' | '$lte', operand: number | string): (a: unknown) => boolean {
  return (a) => {
    if (typeof a !== typeof operand) return false;
    const x = a as number | string;
    switch (op) {
      case '$gt':
        return x > operand;
      case '$gte':
        return x >= operand;
      case '$lt':
        return x < operand;
      case '$lte':
        return x <= operand;
    }
  };
}

function compileOperator(op: Operator, operand: unknown, path: string, lowerKeys: boolean): Check {
  const fail = (actual: unknown) => `${path}: expected ${op} ${show(operand)} got ${show(actual)}`;
  const test = (t: (a: unknown) => boolean): Check => (actual) => (actual !== undefined && scalarTest(actual, t) ? null : fail(actual));
  switch (op) {
    case '$eq':
      return (actual) => (equals(actual, operand) ? null : fail(actual));
    case '$neq':
      return (actual) => (equals(actual, operand) ? fail(actual) : null);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return test(compare(op, operand as number | string));
    case '$in': {
      const values = operand as unknown[];
      return (actual) => (values.some((v) => equals(actual, v)) ? null : fail(actual));
    }
    case '$nin': {
      const values = operand as unknown[];
      return (actual) => (values.some((v) => equals(actual, v)) ? fail(actual) : null);
    }
    case '$startsWith': {
      const s = operand as string;
      return test((a) => typeof a === 'string' && a.startsWith(s));
    }
    case '$endsWith': {
      const s = operand as string;
      return test((a) => typeof a === 'string' && a.endsWith(s));
    }
    case '$contains': {
      const s = operand as string;
      return test((a) => typeof a === 'string' && a.includes(s));
    }
    case '$exist': {
      const want = operand as boolean;
      return (actual) => ((actual !== undefined) === want ? null : `${path}: expected $exist ${want} got ${show(actual)}`);
    }
    case '$and': {
      const checks = (operand as unknown[]).map((c) => compileValue(c, path, lowerKeys));
      return (actual) => firstFailure(checks, actual);
    }
    case '$or': {
      const checks = (operand as unknown[]).map((c) => compileValue(c, path, lowerKeys));
      return (actual) => anyOf(checks, actual, path);
    }
    case '$not': {
      const inner = compileValue(operand, path, lowerKeys);
      return (actual) => (inner(actual) === null ? `${path}: expected $not ${show(operand)} got ${show(actual)}` : null);
    }
  }
}

/** A value in a reason: JSON, cut to 100 characters; a missing value is "nothing". */
function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 100 ? `${s.slice(0, 97)}...` : s;
}

/** Evaluates a compiled filter against a request. */
export function evaluate(filter: CompiledFilter, input: FilterInput): Verdict {
  if (filter.check === null) return { matches: true, reason: null };
  const reason = filter.check(input);
  return { matches: reason === null, reason };
}

// ---------------------------------------------------------------------------
// The request as filters see it

/** The header pairs as an object of lower-case names; a repeated header gives an array of its values. */
export function headerObject(headers: ReadonlyArray<readonly [string, string]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of headers) {
    const k = name.toLowerCase();
    const prev = out[k];
    out[k] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

/** Decoded parameters of a query string (or form body); a repeated name gives an array. */
export function paramsObject(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [k, v] of new URLSearchParams(text.startsWith('?') ? text.slice(1) : text)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/**
 * The body as filters see it: the form fields of an
 * application/x-www-form-urlencoded body, else the JSON value when the
 * bytes are JSON; anything else is not parsed (`parsed: false`).
 */
export function parseBody(body: Buffer, contentType: string | null): { body: unknown; parsed: boolean } {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return { body: paramsObject(body.toString('utf8')), parsed: true };
  if (body.length === 0) return { body: undefined, parsed: false };
  try {
    return { body: JSON.parse(body.toString('utf8')), parsed: true };
  } catch {
    return { body: undefined, parsed: false };
  }
}

/** The filter input of a stored capture. `withBody`: parse the body (skip it for a filter that never reads it). */
export function filterInput(
  capture: { headers: ReadonlyArray<readonly [string, string]>; path: string; query: string; body: Buffer },
  withBody = true,
): FilterInput {
  const headers = headerObject(capture.headers);
  const type = headers['content-type'];
  const parsed = withBody ? parseBody(capture.body, Array.isArray(type) ? type[0] : (type ?? null)) : { body: undefined, parsed: false };
  return { headers, path: capture.path, query: paramsObject(capture.query ?? ''), body: parsed.body, bodyParsed: parsed.parsed };
}
