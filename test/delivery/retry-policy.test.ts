import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, DEFAULT_RETRY, parseRetryAfter, RETRY_AFTER_CAP_SECONDS } from '../../src/delivery/retry-policy.ts';

describe('retry policy', () => {
  it('succeeds on any 2xx', () => {
    for (const statusCode of [200, 201, 202, 204, 299]) assert.deepEqual(decide({ statusCode }, DEFAULT_RETRY, 1), { status: 'succeeded' });
  });

  it('walks the schedule, then is dead', () => {
    const settings = { retryEnabled: true, schedule: [5, 300], intelligent: true };
    assert.deepEqual(decide({ statusCode: 500, errorClass: 'http_status' }, settings, 1), { status: 'pending', delaySeconds: 5 });
    assert.deepEqual(decide({ statusCode: 500, errorClass: 'http_status' }, settings, 2), { status: 'pending', delaySeconds: 300 });
    assert.equal(decide({ statusCode: 500, errorClass: 'http_status' }, settings, 3).status, 'dead');
  });

  it('has the Svix schedule by default: eight attempts over about 28 hours', () => {
    assert.deepEqual(DEFAULT_RETRY.schedule, [5, 300, 1800, 7200, 18000, 36000, 36000]);
    assert.equal(decide({ errorClass: 'timeout' }, DEFAULT_RETRY, 7).status, 'pending');
    assert.equal(decide({ errorClass: 'timeout' }, DEFAULT_RETRY, 8).status, 'dead');
  });

  it('intelligent retry: network errors, timeouts, 408, 425, 429 and 5xx retry; other 4xx and 3xx fail', () => {
    for (const errorClass of ['connection_refused', 'connect_timeout', 'timeout', 'tls_error', 'dns_error', 'network_error'] as const) {
      assert.equal(decide({ errorClass }, DEFAULT_RETRY, 1).status, 'pending', errorClass);
    }
    for (const statusCode of [408, 425, 429, 500, 502, 503, 504, 599]) {
      assert.equal(decide({ statusCode, errorClass: 'http_status' }, DEFAULT_RETRY, 1).status, 'pending', String(statusCode));
    }
    for (const statusCode of [400, 401, 403, 404, 409, 410, 413, 422]) {
      assert.equal(decide({ statusCode, errorClass: 'http_status' }, DEFAULT_RETRY, 1).status, 'failed', String(statusCode));
    }
    for (const statusCode of [301, 302, 307, 308]) {
      assert.equal(decide({ statusCode, errorClass: 'redirect' }, DEFAULT_RETRY, 1).status, 'failed', String(statusCode));
    }
  });

  it('honours Retry-After within the cap, at least one second', () => {
    assert.deepEqual(decide({ statusCode: 429, errorClass: 'http_status', retryAfterSeconds: 42 }, DEFAULT_RETRY, 1), { status: 'pending', delaySeconds: 42 });
    assert.deepEqual(decide({ statusCode: 429, errorClass: 'http_status', retryAfterSeconds: 0 }, DEFAULT_RETRY, 1), { status: 'pending', delaySeconds: 1 });
    assert.deepEqual(decide({ statusCode: 503, errorClass: 'http_status', retryAfterSeconds: 10 ** 7 }, DEFAULT_RETRY, 1), {
      status: 'pending',
      delaySeconds: RETRY_AFTER_CAP_SECONDS,
    });
  });

  it('without intelligent retry retries everything on the schedule and ignores Retry-After', () => {
    const settings = { retryEnabled: true, schedule: [60], intelligent: false };
    assert.deepEqual(decide({ statusCode: 404, errorClass: 'http_status', retryAfterSeconds: 1 }, settings, 1), { status: 'pending', delaySeconds: 60 });
    assert.deepEqual(decide({ statusCode: 301, errorClass: 'redirect' }, settings, 1), { status: 'pending', delaySeconds: 60 });
  });

  it('never retries a refused address or a missing capture, nor anything when retries are off', () => {
    const always = { retryEnabled: true, schedule: [1], intelligent: false };
    assert.equal(decide({ errorClass: 'ssrf_refused' }, always, 1).status, 'failed');
    assert.equal(decide({ errorClass: 'capture_missing' }, always, 1).status, 'failed');
    assert.equal(decide({ statusCode: 503, errorClass: 'http_status' }, { ...DEFAULT_RETRY, retryEnabled: false }, 1).status, 'failed');
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-5', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});
