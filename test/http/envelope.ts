import assert from 'node:assert/strict';

/**
 * Asserts the specification's error body: exactly {error: {code, message}},
 * with a message that carries no stack frame and no SQL.
 */
export function assertErrorEnvelope(res: { status: number; json: any }, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.deepEqual(Object.keys(res.json ?? {}), ['error'], JSON.stringify(res.json));
  assert.deepEqual(Object.keys(res.json.error).sort(), ['code', 'message']);
  assert.equal(res.json.error.code, code);
  assert.equal(typeof res.json.error.message, 'string');
  assert.ok(res.json.error.message.length > 0);
  assertNoInternals(JSON.stringify(res.json));
}

export function assertNoInternals(text: string): void {
  assert.doesNotMatch(text, /\bat .+\(.*:\d+:\d+\)|\.ts:\d+|node_modules|stack/i, 'leaks a stack trace');
  assert.doesNotMatch(text, /\b(select|insert|update|delete)\b.+\b(from|into|set|where)\b|relation ".*"|syntax error|SQLSTATE/i, 'leaks SQL');
}
