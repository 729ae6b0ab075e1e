import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { displayPrefix, generateKey, hashKey, isWellFormedKey, KEY_PREFIX } from '../../src/auth/key-format.ts';

describe('key format', () => {
  it('has a live prefix, the region and at least 32 random base62 characters', () => {
    const key = generateKey('eu');
    assert.match(key, /^wr_live_eu_[0-9A-Za-z]{38}$/);
    assert.equal(KEY_PREFIX, 'wr_live');
    assert.ok(isWellFormedKey(key));
  });

  it('draws a different secret every time', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateKey('us')));
    assert.equal(keys.size, 1000);
    const chars = new Set([...keys].flatMap((k) => [...k.slice('wr_live_us_'.length, -6)]));
    assert.equal(chars.size, 62, 'the whole base62 alphabet is used');
  });

  it('refuses a key whose checksum does not match (one character changed)', () => {
    const key = generateKey('us');
    const i = key.length - 10;
    const changed = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    assert.equal(isWellFormedKey(changed), false);
    assert.equal(isWellFormedKey(key.slice(0, -1)), false, 'truncated');
    assert.equal(isWellFormedKey(key.replace('wr_live_us_', 'wr_live_eu_')), false, 'region changed');
  });

  it('refuses strings of the wrong shape', () => {
    for (const s of ['', 'garbage', 'wr_test_us_' + 'a'.repeat(38), 'wr_live__' + 'a'.repeat(38), 'wr_live_US_' + 'a'.repeat(38), `${generateKey('us')} `]) {
      assert.equal(isWellFormedKey(s), false, s);
    }
  });

  it('keeps a short display prefix: prefix, region and four secret characters', () => {
    const key = generateKey('apac1');
    assert.equal(displayPrefix(key), key.slice(0, 'wr_live_apac1_'.length + 4));
    assert.ok(displayPrefix(key).length < key.length - 30);
  });

  it('hashes with SHA-256 of the whole key', () => {
    const key = generateKey('us');
    assert.equal(hashKey(key).length, 32);
    assert.deepEqual(hashKey(key), hashKey(key));
    assert.notDeepEqual(hashKey(key), hashKey(generateKey('us')));
  });
});
