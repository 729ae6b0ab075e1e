import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileFilter, evaluate, filterInput, FILTER_MAX_BYTES, validateFilter, type FilterInput } from '../../src/routing/filter.ts';

// The filter language (issue 26, docs/routing.md): every operator with its
// edge cases (missing field, null, number vs string, nested arrays,
// unicode), form and non-JSON bodies, the reasons, and the 400 messages.

function input(body: unknown, more: Partial<FilterInput> = {}): FilterInput {
  return { headers: {}, path: '', query: {}, body, bodyParsed: body !== undefined, ...more };
}
function check(filter: unknown, inp: FilterInput) {
  assert.equal(validateFilter(filter), undefined, `valid: ${JSON.stringify(filter)}`);
  return evaluate(compileFilter(filter), inp);
}
const matches = (filter: unknown, body: unknown, more: Partial<FilterInput> = {}) => check(filter, input(body, more)).matches;

describe('matching', () => {
  test('null forwards everything; plain values are strict equality (number is not string)', () => {
    assert.equal(check(null, input(undefined)).matches, true);
    assert.equal(matches({ body: { a: 1 } }, { a: 1 }), true);
    assert.equal(matches({ body: { a: 1 } }, { a: '1' }), false);
    assert.equal(matches({ body: { a: '1' } }, { a: 1 }), false);
    assert.equal(matches({ body: { a: true } }, { a: true }), true);
    assert.equal(matches({ body: { a: null } }, { a: null }), true);
    assert.equal(matches({ body: { a: null } }, {}), false, 'null is not missing');
  });

  test('nested objects match a subset; arrays in the request match when an element does', () => {
    const body = { data: { object: { id: 'in_1', lines: [{ price: 5 }, { price: 10 }], tags: ['a', 'b'] }, extra: 1 } };
    assert.equal(matches({ body: { data: { object: { id: 'in_1' } } } }, body), true);
    assert.equal(matches({ body: { data: { object: { tags: 'b' } } } }, body), true);
    assert.equal(matches({ body: { data: { object: { tags: 'c' } } } }, body), false);
    assert.equal(matches({ body: { data: { object: { lines: { price: 10 } } } } }, body), true, 'a nested object against an array of objects');
    assert.equal(matches({ body: { data: { object: { lines: { price: { $gt: 10 } } } } } }, body), false);
    assert.equal(matches({ body: { data: { object: { tags: ['b', 'a'] } } } }, body), true, 'a filter array: the request array holds each element');
    assert.equal(matches({ body: { data: { object: { tags: ['a', 'z'] } } } }, body), false);
    assert.equal(matches({ body: { m: [[1, 2], [3]] } }, { m: [[1, 2], [3]] }), true, 'nested arrays equal');
    assert.equal(matches({ body: { m: { $eq: [3] } } }, { m: [[1, 2], [3]] }), true, 'an element of an array of arrays');
    assert.equal(matches({ body: { m: { $contains: 'x' } } }, { m: ['ax', 'b'] }), true);
  });

  test('comparison operators: numbers with numbers, strings with strings, missing and null never compare', () => {
    assert.equal(matches({ body: { n: { $gt: 5 } } }, { n: 6 }), true);
    assert.equal(matches({ body: { n: { $gt: 5 } } }, { n: 5 }), false);
    assert.equal(matches({ body: { n: { $gte: 5 } } }, { n: 5 }), true);
    assert.equal(matches({ body: { n: { $lt: 5 } } }, { n: 4.5 }), true);
    assert.equal(matches({ body: { n: { $lte: 5 } } }, { n: 6 }), false);
    assert.equal(matches({ body: { n: { $gt: 5 } } }, { n: '6' }), false, 'a string never compares with a number');
    assert.equal(matches({ body: { s: { $gte: '2024-01-01' } } }, { s: '2024-06-30' }), true);
    assert.equal(matches({ body: { n: { $lt: 5 } } }, {}), false, 'missing');
    assert.equal(matches({ body: { n: { $lt: 5 } } }, { n: null }), false, 'null');
    assert.equal(matches({ body: { n: { $gt: 1 } } }, { n: [0, 2] }), true, 'any element');
  });

  test('$eq $neq $in $nin, with missing fields and null', () => {
    assert.equal(matches({ body: { a: { $eq: 'x' } } }, { a: 'x' }), true);
    assert.equal(matches({ body: { a: { $eq: { b: 1 } } } }, { a: { b: 1 } }), true, '$eq on an object is exact');
    assert.equal(matches({ body: { a: { $eq: { b: 1 } } } }, { a: { b: 1, c: 2 } }), false);
    assert.equal(matches({ body: { a: { $neq: 'x' } } }, { a: 'y' }), true);
    assert.equal(matches({ body: { a: { $neq: 'x' } } }, {}), true, 'missing is not equal');
    assert.equal(matches({ body: { a: { $neq: null } } }, { a: null }), false);
    assert.equal(matches({ body: { a: { $in: ['x', 'y'] } } }, { a: 'y' }), true);
    assert.equal(matches({ body: { a: { $in: [1, 2] } } }, { a: '1' }), false);
    assert.equal(matches({ body: { a: { $in: [null] } } }, { a: null }), true);
    assert.equal(matches({ body: { a: { $in: ['x'] } } }, {}), false);
    assert.equal(matches({ body: { a: { $nin: ['x'] } } }, { a: 'y' }), true);
    assert.equal(matches({ body: { a: { $nin: ['x'] } } }, { a: ['y', 'x'] }), false, 'an element is in');
    assert.equal(matches({ body: { a: { $nin: ['x'] } } }, {}), true);
  });

  test('string operators, unicode included', () => {
    assert.equal(matches({ body: { t: { $startsWith: 'invoice.' } } }, { t: 'invoice.paid' }), true);
    assert.equal(matches({ body: { t: { $endsWith: '.paid' } } }, { t: 'invoice.paid' }), true);
    assert.equal(matches({ body: { t: { $contains: 'ice.p' } } }, { t: 'invoice.paid' }), true);
    assert.equal(matches({ body: { t: { $startsWith: 'Ü' } } }, { t: 'Über 🚀' }), true);
    assert.equal(matches({ body: { t: { $endsWith: '🚀' } } }, { t: 'Über 🚀' }), true);
    assert.equal(matches({ body: { 'ключ': 'значение' } }, { 'ключ': 'значение' }), true);
    assert.equal(matches({ body: { t: { $contains: 'x' } } }, { t: 5 }), false, 'not a string');
    assert.equal(matches({ body: { t: { $startsWith: 'a' } } }, {}), false);
  });

  test('$exist, $and, $or, $not', () => {
    assert.equal(matches({ body: { a: { $exist: true } } }, { a: null }), true, 'null exists');
    assert.equal(matches({ body: { a: { $exist: false } } }, {}), true);
    assert.equal(matches({ body: { a: { $exist: false } } }, { a: 0 }), false);
    assert.equal(matches({ body: { n: { $and: [{ $gt: 1 }, { $lt: 5 }] } } }, { n: 3 }), true);
    assert.equal(matches({ body: { n: { $and: [{ $gt: 1 }, { $lt: 5 }] } } }, { n: 7 }), false);
    assert.equal(matches({ body: { $or: [{ type: 'a' }, { type: 'b' }] } }, { type: 'b' }), true);
    assert.equal(matches({ body: { $or: [{ type: 'a' }, { type: 'b' }] } }, { type: 'c' }), false);
    assert.equal(matches({ body: { type: { $not: { $startsWith: 'charge.' } } } }, { type: 'invoice.paid' }), true);
    assert.equal(matches({ body: { type: { $not: 'x' } } }, { type: 'x' }), false);
    // across parts, at the root
    const f = { $or: [{ headers: { 'x-kind': 'a' } }, { body: { kind: 'a' } }] };
    assert.equal(matches(f, { kind: 'a' }), true);
    assert.equal(matches(f, { kind: 'b' }, { headers: { 'x-kind': 'a' } }), true);
    assert.equal(matches(f, { kind: 'b' }), false);
    assert.equal(matches({ $not: { path: '/x' } }, {}, { path: '/y' }), true);
  });

  test('headers match names case-insensitively; query is decoded; path is the path', () => {
    const inp = filterInput({
      headers: [['X-GitHub-Event', 'push'], ['Content-Type', 'application/json'], ['X-Multi', '1'], ['x-multi', '2']],
      path: '/deploy',
      query: 'ref=refs%2Fheads%2Fmain&tag=a&tag=b&name=J%C3%BCrgen',
      body: Buffer.from('{"ref":"refs/heads/main"}'),
    });
    assert.equal(check({ headers: { 'x-github-event': 'push' } }, inp).matches, true);
    assert.equal(check({ headers: { 'X-GITHUB-EVENT': 'push' } }, inp).matches, true);
    assert.equal(check({ headers: { 'x-multi': '2' } }, inp).matches, true, 'a repeated header is an array of its values');
    assert.equal(check({ query: { ref: 'refs/heads/main', tag: 'b', name: 'Jürgen' } }, inp).matches, true);
    assert.equal(check({ path: { $startsWith: '/dep' } }, inp).matches, true);
    assert.equal(check({ path: '/other' }, inp).matches, false);
    assert.equal(check({ body: { ref: 'refs/heads/main' }, headers: { 'x-github-event': 'push' } }, inp).matches, true);
  });

  test('a form body is its fields; a non-JSON body matches only a filter without body', () => {
    const form = filterInput({ headers: [['Content-Type', 'application/x-www-form-urlencoded; charset=utf-8']], path: '', query: '', body: Buffer.from('CallStatus=completed&To=%2B15551234') });
    assert.equal(check({ body: { CallStatus: 'completed', To: '+15551234' } }, form).matches, true);
    const xml = filterInput({ headers: [['Content-Type', 'application/xml']], path: '/x', query: '', body: Buffer.from('<a/>') });
    assert.equal(check({ path: '/x' }, xml).matches, true);
    const v = check({ body: { $exist: false } }, xml);
    assert.equal(v.matches, false);
    assert.match(v.reason!, /^body: not JSON or form data/);
    // JSON without a JSON content type is still JSON
    const bare = filterInput({ headers: [], path: '', query: '', body: Buffer.from('{"a":[1]}') });
    assert.equal(check({ body: { a: 1 } }, bare).matches, true);
  });
});

describe('reasons', () => {
  test('name the first rule that failed, with the expectation and what was there', () => {
    const f = { body: { type: { $startsWith: 'invoice.' } } };
    assert.deepEqual(check(f, input({ type: 'charge.succeeded' })), {
      matches: false,
      reason: 'body.type: expected $startsWith "invoice." got "charge.succeeded"',
    });
    assert.equal(check({ body: { a: { b: 1 } } }, input({ a: {} })).reason, 'body.a.b: expected 1 got nothing');
    assert.equal(check({ headers: { 'X-Event': 'push' } }, input(undefined, { headers: { 'x-event': 'ping' } })).reason, 'headers.X-Event: expected "push" got "ping"');
    assert.match(check({ body: { $or: [{ a: 1 }, { a: 2 }] } }, input({ a: 3 })).reason!, /^body: no \$or condition matched \(first: body\.a: expected 1 got 3\)$/);
    assert.deepEqual(check({ body: { type: { $in: ['a'] } } }, input({ type: 'a' })), { matches: true, reason: null });
  });
});

describe('validation', () => {
  test('answers a message naming the path of the offending part', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['x', /^Field "filter" must be an object/],
      [[], /^Field "filter" must be an object/],
      [{ bodyy: {} }, /^Field "filter\.bodyy": unknown part "bodyy"/],
      [{ body: { type: { $regex: 'x' } } }, /^Field "filter\.body\.type\.\$regex": unknown operator \$regex/],
      [{ body: { n: { $gt: true } } }, /^Field "filter\.body\.n\.\$gt": \$gt takes a number or a string/],
      [{ body: { n: { $in: 'x' } } }, /^Field "filter\.body\.n\.\$in": \$in takes an array/],
      [{ body: { n: { $startsWith: 1 } } }, /^Field "filter\.body\.n\.\$startsWith": \$startsWith takes a string/],
      [{ body: { n: { $exist: 'yes' } } }, /^Field "filter\.body\.n\.\$exist": \$exist takes true or false/],
      [{ body: { $or: [] } }, /^Field "filter\.body\.\$or": \$or takes a non-empty array/],
      [{ body: { $and: [{ a: { $lt: [] } }] } }, /^Field "filter\.body\.\$and\[0\]\.a\.\$lt": \$lt takes a number or a string/],
      [{ $or: [{ nope: 1 }] }, /^Field "filter\.\$or\[0\]\.nope": unknown part/],
      [{ $gt: 1 }, /^Field "filter\.\$gt": \$gt cannot apply to the whole request/],
      [{ body: { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: 1 } } } } } } } } } } }, /^Field "filter\.body\.a\.b\.c\.d\.e\.f\.g\.h[^"]*" is nested more than 10 levels deep/],
      [{ body: { s: 'x'.repeat(FILTER_MAX_BYTES) } }, /^Field "filter" is \d+ bytes of JSON; a filter may be at most 65536 bytes \(64 KB\)/],
    ];
    for (const [f, re] of cases) assert.match(validateFilter(f) ?? 'accepted', re, JSON.stringify(f).slice(0, 80));
    // nine levels is fine
    assert.equal(validateFilter({ body: { a: { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } } } }), undefined);
  });
});
