/** The longest forward target URL accepted anywhere (an endpoint's forward_url, a destination's url). */
export const TARGET_URL_MAX = 2048;

/**
 * The rules every HTTPS URL Weir forwards to follows, wherever it is set:
 * an endpoint's forward_url, a destination's url, a subscription's target_url. Returns the first broken
 * one as a sentence naming `field`, or undefined.
 * - `httpsHint` follows the https:// rule (the endpoint says null disables forwarding);
 *
 * No URL may carry credentials (user:password@): Weir never sends them (no
 * basic auth to destinations), and every role, viewers included, reads these
 * URLs in lists, incidents and forwards, so a password in one would be
 * shown to everyone and used by nobody (issue 23, defect 4; migration 0011
 * stripped the ones stored before).
 */
export function httpsTargetUrlProblem(url: string, field: string, opts: { httpsHint?: string } = {}): string | undefined {
  if (!url.startsWith('https://')) return `Field "${field}" must start with https://${opts.httpsHint ?? ''}.`;
  if (url.length > TARGET_URL_MAX) return `Field "${field}" must be at most ${TARGET_URL_MAX} characters long.`;
  // The URL goes onto the request line as is: no white space or control characters.
  if (/[\s\p{Cc}]/u.test(url)) return `Field "${field}" must not contain spaces or control characters.`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `Field "${field}" is not a valid URL.`;
  }
  if (!parsed.hostname) return `Field "${field}" must name a host.`;
  if (parsed.username || parsed.password) return `Field "${field}" must not carry credentials (user:password@).`;
  return undefined;
}
