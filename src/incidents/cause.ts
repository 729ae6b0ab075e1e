/**
 * The incident's likely cause: one human sentence from the evidence (the
 * error classes and status codes of its most recent failures). Pure, so
 * every wording is testable without a network.
 */

export interface CauseEvidence {
  errorClass: string | null;
  statusCode: number | null;
  /** Count of failures with this class and status. */
  count: number;
  /** The largest Retry-After (seconds) seen among them. */
  retryAfterSeconds: number | null;
}

/** A cause category and its sentence. */
function categorize(e: CauseEvidence): { key: string; text: string } {
  const code = e.statusCode;
  switch (e.errorClass) {
    case 'dns_error':
      return { key: 'dns', text: "DNS failure: the destination's host name does not resolve" };
    case 'connection_refused':
      return { key: 'refused', text: 'connection refused: nothing is listening at the destination address' };
    case 'tls_error':
      return { key: 'tls', text: "TLS certificate problem: the destination's certificate is untrusted, expired or for another name" };
    case 'timeout':
    case 'connect_timeout':
      return { key: 'timeout', text: 'timeout: the destination does not answer in time' };
    case 'redirect':
      return { key: 'redirect', text: `redirect refused: the destination answers ${code ?? '3xx'} and redirects are not followed` };
    case 'ssrf_refused':
      return { key: 'ssrf', text: 'SSRF refusal: the destination resolves to an address Weir refuses to connect to' };
    case 'network_error':
      return { key: 'network', text: 'network error: connections to the destination are reset or closed' };
    case 'invalid_url':
    case 'invalid_request':
      return { key: 'invalid', text: 'the request cannot be sent to this destination (invalid URL or method)' };
  }
  if (code === 401 || code === 403) return { key: 'auth', text: `credentials rejected: the destination answers ${code}` };
  if (code === 429) return { key: 'rate', text: 'rate limited: the destination answers 429' };
  if (code !== null && code >= 500) return { key: '5xx', text: `the destination answers 5xx server errors (${code})` };
  if (code !== null) return { key: `http_${code}`, text: `the destination rejects the requests with HTTP ${code}` };
  return { key: 'unknown', text: 'the forwards fail for an unrecorded reason' };
}

/**
 * One sentence for the evidence: the dominant cause when it explains at
 * least 80 % of the failures, otherwise "mixed causes" listing the main
 * ones with their shares. A 429 names the longest Retry-After seen.
 */
export function likelyCause(evidence: readonly CauseEvidence[]): string {
  const groups = new Map<string, { text: string; count: number; retryAfter: number | null }>();
  let total = 0;
  for (const e of evidence) {
    if (e.count <= 0) continue;
    const c = categorize(e);
    const g = groups.get(c.key) ?? { text: c.text, count: 0, retryAfter: null };
    g.count += e.count;
    if (e.retryAfterSeconds !== null) g.retryAfter = Math.max(g.retryAfter ?? 0, e.retryAfterSeconds);
    // 5xx with several codes: name the category, not one code
    if (c.key === '5xx' && g.text !== c.text) g.text = 'the destination answers 5xx server errors';
    groups.set(c.key, g);
    total += e.count;
  }
  if (total === 0) return 'no failures recorded yet';
  const sorted = [...groups.entries()].sort((a, b) => b[1].count - a[1].count);
  const phrase = ([key, g]: [string, { text: string; retryAfter: number | null }]) =>
    key === 'rate' ? `${g.text}${g.retryAfter !== null ? ` with Retry-After ${g.retryAfter} s` : ' without Retry-After'}` : g.text;
  const [top] = sorted;
  if (top[1].count / total >= 0.8) {
    const s = phrase(top);
    return s.charAt(0).toUpperCase() + s.slice(1) + '.';
  }
  const parts = sorted.slice(0, 3).map((entry) => `${Math.round((entry[1].count / total) * 100)} % ${phrase(entry)}`);
  return `Mixed causes: ${parts.join('; ')}${sorted.length > 3 ? '; and others' : ''}.`;
}

/** The likely cause with the provider-outage reading appended when several destinations of one ASN fail at once. */
export function withProviderOutage(cause: string, asn: number | null, asnOrg: string | null, destinations: number): string {
  if (asn === null || destinations < 2) return cause;
  return `${cause} ${destinations} destinations on AS${asn}${asnOrg ? ` (${asnOrg})` : ''} are failing at the same time: likely a provider outage.`;
}
