import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { likelyCause, withProviderOutage, type CauseEvidence } from '../../src/incidents/cause.ts';

const e = (errorClass: string | null, statusCode: number | null, count = 1, retryAfterSeconds: number | null = null): CauseEvidence => ({
  errorClass,
  statusCode,
  count,
  retryAfterSeconds,
});

describe('likely cause', () => {
  it('names each single cause', () => {
    const cases: Array<[CauseEvidence, RegExp]> = [
      [e('dns_error', null), /^DNS failure/],
      [e('connection_refused', null), /^Connection refused/],
      [e('tls_error', null), /^TLS certificate problem/],
      [e('timeout', null), /^Timeout/],
      [e('connect_timeout', null), /^Timeout/],
      [e('http_status', 503), /5xx server errors \(503\)/],
      [e('http_status', 401), /^Credentials rejected: the destination answers 401/],
      [e('http_status', 403), /^Credentials rejected: the destination answers 403/],
      [e('http_status', 429, 1, 120), /^Rate limited: the destination answers 429 with Retry-After 120 s\.$/],
      [e('http_status', 429), /without Retry-After/],
      [e('redirect', 302), /^Redirect refused: the destination answers 302/],
      [e('ssrf_refused', null), /^SSRF refusal/],
      [e('http_status', 404), /rejects the requests with HTTP 404/],
    ];
    for (const [evidence, re] of cases) assert.match(likelyCause([evidence]), re, JSON.stringify(evidence));
  });

  it('groups several 5xx codes, and keeps a dominant cause at 80 % or more', () => {
    assert.equal(likelyCause([e('http_status', 500, 3), e('http_status', 502, 2)]), 'The destination answers 5xx server errors.');
    assert.match(likelyCause([e('timeout', null, 8), e('http_status', 500, 2)]), /^Timeout/);
  });

  it('reports mixed causes with their shares', () => {
    assert.equal(
      likelyCause([e('timeout', null, 5), e('http_status', 503, 3), e('dns_error', null, 2)]),
      "Mixed causes: 50 % timeout: the destination does not answer in time; 30 % the destination answers 5xx server errors (503); 20 % DNS failure: the destination's host name does not resolve.",
    );
  });

  it('adds the provider-outage reading only for two or more destinations of a known ASN', () => {
    assert.equal(withProviderOutage('Timeout.', 64500, 'Acme', 1), 'Timeout.');
    assert.equal(withProviderOutage('Timeout.', null, null, 3), 'Timeout.');
    assert.match(withProviderOutage('Timeout.', 64500, 'Acme', 3), /3 destinations on AS64500 \(Acme\) are failing at the same time: likely a provider outage\.$/);
  });
});
