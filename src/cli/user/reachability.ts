import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { classifyAddress } from '../../delivery/ssrf.ts';

// Names that never resolve to a public address, whatever DNS says.
const LOCAL_NAME_RE = /(^localhost$|\.localhost$|\.local$|\.internal$|\.lan$|\.home\.arpa$)/i;
const LOOKUP_TIMEOUT_MS = 2_000;

/**
 * Why a provider such as Stripe could not reach `url`, or undefined when it
 * looks public (or cannot be told: a failed lookup is not worth a warning).
 * It reuses the SSRF guard's address classes, so "private" means the same
 * here as for forwards.
 */
export async function unreachableReason(url: string): Promise<string | undefined> {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  if (isIP(host) !== 0) return addressReason(host);
  if (LOCAL_NAME_RE.test(host) || !host.includes('.')) return `${host} is a local name`;
  let timer: NodeJS.Timeout | undefined;
  try {
    const addresses = await Promise.race([
      lookup(host, { all: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), LOOKUP_TIMEOUT_MS);
      }),
    ]);
    for (const a of addresses) {
      const reason = addressReason(a.address);
      if (reason) return `${host} resolves to ${reason}`;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function addressReason(ip: string): string | undefined {
  const v = classifyAddress(ip);
  return v.class === 'public' ? undefined : `${ip}, a ${v.reason ?? v.class} address`;
}

/** The one line `weir listen` prints when the URL it shows is not reachable from the internet. */
export function unreachableWarning(reason: string): string {
  return `weir: warning: providers cannot reach this URL (${reason}). Run Weir on a host they can reach, with WEIR_INGEST_URL set to its public https address; see docs/local-development.md.`;
}
