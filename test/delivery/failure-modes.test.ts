import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { closedPort, nxdomainResolver, unacceptedPort, type Reply } from '../helpers/https.ts';
import { attempts, deliveries, orgWithEndpoint, startTestWorker, useWorkerTest, waitForStatus, waitUntil } from './helpers.ts';

// A long first retry delay: a retried delivery stays visibly pending for the whole test.
const LATER = [600];

describe('failure modes', () => {
  const t = useWorkerTest({ stopGraceMs: 0 });

  /** One capture to one destination at `url`; waits for its first attempt and returns the delivery and that attempt. */
  async function forwardOnce(url: string, dest: Parameters<typeof insertForwardDestination>[2] = {}, workerOpts: Parameters<typeof startTestWorker>[1] = {}) {
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url, retrySchedule: LATER, ...dest });
    await insertCaptures(t.db, ep, [{ body: '{"x":1}' }]);
    t.worker = await startTestWorker(t.db, workerOpts);
    const [attempt] = await waitUntil(async () => {
      const a = await attempts(t.db);
      return a.length > 0 ? a : undefined;
    }, 'the first attempt');
    const [delivery] = await deliveries(t.db);
    return { delivery, attempt };
  }

  const replying = (reply: Reply) => t.receiver({ reply: () => reply });

  it('retries a refused connection', async () => {
    const { delivery, attempt } = await forwardOnce(`https://127.0.0.1:${await closedPort()}/`);
    assert.equal(attempt.error_class, 'connection_refused');
    assert.equal(attempt.status_code, null);
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.attempt_count, 1);
    assert.ok(delivery.next_attempt_at.getTime() > delivery.last_attempt_at!.getTime() + 590_000, 'next attempt follows the schedule');
  });

  it('retries a destination whose connection is not completed within the connect timeout (connect_timeout)', async (tt) => {
    const unaccepted = await unacceptedPort();
    tt.after(() => unaccepted.close());
    const { delivery, attempt } = await forwardOnce(`https://127.0.0.1:${unaccepted.port}/`, {}, { transport: { connectTimeoutMs: 300 } });
    assert.equal(attempt.error_class, 'connect_timeout', attempt.error_message ?? '');
    assert.equal(attempt.status_code, null);
    assert.equal(delivery.status, 'pending');
  });

  it('retries a destination whose name resolves nowhere (dns_error)', async (tt) => {
    // a name under .invalid (RFC 6761), asked of a loopback DNS server that answers NXDOMAIN
    const dns = await nxdomainResolver();
    tt.after(() => dns.close());
    const { delivery, attempt } = await forwardOnce('https://weir-test.invalid/hook', {}, { transport: { allowPrivate: false, resolver: dns.resolver } });
    assert.equal(attempt.error_class, 'dns_error', attempt.error_message ?? '');
    assert.ok(dns.queries.includes('weir-test.invalid'), `the name was looked up: ${dns.queries.join(', ')}`);
    assert.equal(delivery.status, 'pending');
  });

  it('retries a destination that does not answer within the timeout', async () => {
    const rx = await replying('hang');
    const { delivery, attempt } = await forwardOnce(rx.url, {}, { transport: { timeoutMs: 300 } });
    assert.equal(attempt.error_class, 'timeout');
    assert.equal(delivery.status, 'pending');
    assert.equal(rx.received.length, 1);
  });

  it('retries a TLS error (certificate not trusted)', async () => {
    const rx = await t.receiver({ untrusted: true });
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(attempt.error_class, 'tls_error');
    assert.match(attempt.error_message ?? '', /certificate/i);
    assert.equal(delivery.status, 'pending');
    assert.equal(rx.received.length, 0);
  });

  it('retries a connection reset', async () => {
    const rx = await replying('destroy');
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(attempt.error_class, 'network_error');
    assert.equal(delivery.status, 'pending');
  });

  it('retries a 500 and records its answer', async () => {
    const rx = await replying({ status: 500, headers: { 'content-type': 'application/json', 'x-trace': 't1' }, body: '{"error":"boom"}' });
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(attempt.error_class, 'http_status');
    assert.equal(attempt.status_code, 500);
    assert.equal(attempt.response_body?.toString(), '{"error":"boom"}');
    assert.ok(attempt.response_headers?.some(([n, v]) => n === 'x-trace' && v === 't1'));
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.last_status_code, 500);
  });

  it('honours Retry-After on a 429 instead of the schedule', async () => {
    const rx = await replying({ status: 429, headers: { 'retry-after': '7' } });
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(attempt.status_code, 429);
    assert.equal(delivery.status, 'pending');
    const delay = delivery.next_attempt_at.getTime() - delivery.last_attempt_at!.getTime();
    assert.ok(delay >= 7_000 && delay < 600_000, `next attempt ${delay} ms later: Retry-After, not the 600 s schedule`);
  });

  it('clamps a huge Retry-After to the cap', async () => {
    const rx = await replying({ status: 503, headers: { 'retry-after': '99999999' } });
    const { delivery } = await forwardOnce(rx.url, { retrySchedule: [5] });
    const delay = delivery.next_attempt_at.getTime() - delivery.last_attempt_at!.getTime();
    assert.ok(delay >= 3_590_000 && delay <= 3_700_000, `clamped to an hour, got ${delay} ms`);
  });

  it('does not follow a 301 and does not retry it', async () => {
    const rx = await replying({ status: 301, headers: { location: 'https://127.0.0.1:1/elsewhere' } });
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(attempt.error_class, 'redirect');
    assert.equal(attempt.status_code, 301);
    assert.equal(delivery.status, 'failed');
    assert.equal(rx.received.length, 1);
  });

  for (const status of [400, 401, 404, 422]) {
    it(`does not retry a ${status}`, async () => {
      const rx = await replying({ status });
      const { delivery } = await forwardOnce(rx.url);
      assert.equal(delivery.status, 'failed');
    });
  }

  for (const status of [408, 425, 502, 503]) {
    it(`retries a ${status}`, async () => {
      const rx = await replying({ status });
      const { delivery } = await forwardOnce(rx.url);
      assert.equal(delivery.status, 'pending');
    });
  }

  it('retries every failure on the fixed schedule when intelligent retry is off', async () => {
    const rx = await replying({ status: 400, headers: { 'retry-after': '7' } });
    const { delivery } = await forwardOnce(rx.url, { intelligentRetry: false });
    assert.equal(delivery.status, 'pending');
    assert.ok(delivery.next_attempt_at.getTime() - delivery.last_attempt_at!.getTime() >= 590_000, 'Retry-After ignored');
  });

  it('fails at once when retries are disabled', async () => {
    const rx = await replying({ status: 503 });
    const { delivery } = await forwardOnce(rx.url, { retryEnabled: false });
    assert.equal(delivery.status, 'failed');
  });

  it('retries until it succeeds, with the same webhook-id each time', async () => {
    const rx = await t.receiver({ reply: (_r, i) => (i < 2 ? { status: 503 } : { status: 204, body: '' }) });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [0, 0, 600] });
    const [capture] = await insertCaptures(t.db, ep, [{ body: '{}' }]);
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['succeeded'], 1);
    const [d] = await deliveries(t.db);
    assert.equal(d.attempt_count, 3);
    assert.equal(d.last_status_code, 204);
    assert.deepEqual((await attempts(t.db, d.id)).map((a) => [a.attempt_number, a.status_code]), [[1, 503], [2, 503], [3, 204]]);
    assert.deepEqual(rx.received.map((r) => r.headers['webhook-id']), Array(3).fill(`msg_${capture.id}`));
  });

  it('is dead once the schedule is exhausted', async () => {
    const rx = await replying({ status: 500 });
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url, retrySchedule: [0, 0] });
    await insertCaptures(t.db, ep, [{ body: '{}' }]);
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['dead'], 1);
    const [d] = await deliveries(t.db);
    assert.equal(d.attempt_count, 3);
    assert.match(d.last_error ?? '', /exhausted/);
    assert.equal(rx.received.length, 3);
  });

  it('stores at most 64 KiB of an answer and marks it truncated', async () => {
    const rx = await replying({ status: 200, body: Buffer.alloc(1024 * 1024, 'a') });
    const { delivery, attempt } = await forwardOnce(rx.url);
    assert.equal(delivery.status, 'succeeded');
    assert.equal(attempt.response_body?.length, 64 * 1024);
    assert.equal(attempt.response_body_truncated, true);
  });

  it('fails at once, without retry, a request HTTP cannot carry', async () => {
    const rx = await t.receiver();
    const { delivery, attempt } = await forwardOnce(rx.url, { methodOverride: 'NOT A METHOD', intelligentRetry: false });
    assert.equal(attempt.error_class, 'invalid_request');
    assert.equal(delivery.status, 'failed');
    assert.equal(rx.received.length, 0);
  });

  it('fails a delivery whose capture no longer exists, without sending anything', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db);
    await insertForwardDestination(t.db, ep, { url: rx.url });
    await insertCaptures(t.db, ep, [{ body: '{}' }]);
    await t.db.query('delete from captured_requests');
    t.worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['failed'], 1);
    assert.match((await deliveries(t.db))[0].last_error ?? '', /no longer exists/);
    assert.equal(rx.received.length, 0);
  });
});
