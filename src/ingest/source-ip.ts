import { BlockList, isIP } from 'node:net';

/** WEIR_TRUSTED_PROXIES (addresses or CIDR ranges, validated by config.ts) as a matcher. */
export function trustedProxies(entries: readonly string[]): BlockList | undefined {
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const [addr, bits] = entry.split('/');
    const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(bits), type);
  }
  return list;
}

/** `::ffff:1.2.3.4` (an IPv4 peer on a dual-stack socket) is 1.2.3.4. */
export function normalizeIp(addr: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(addr) ? addr.slice(7) : addr;
}

function isTrusted(list: BlockList, addr: string): boolean {
  const family = isIP(addr);
  return family !== 0 && list.check(addr, family === 6 ? 'ipv6' : 'ipv4');
}

/** One X-Forwarded-For hop: a bare address, or `1.2.3.4:port` / `[v6]:port` as some proxies write it. */
function hopAddress(hop: string): string | undefined {
  let h = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (bracketed) h = bracketed[1];
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(h)) h = h.slice(0, h.lastIndexOf(':'));
  return isIP(h) ? normalizeIp(h) : undefined;
}

/**
 * The client's address. X-Forwarded-For is believed only when the peer is a
 * configured proxy, and then only as far as the chain is made of configured
 * proxies: walking it from the right, the first hop that is not a trusted
 * proxy is the client (anything left of it was written by the client and
 * could be forged). A malformed hop stops the walk at the last good address.
 */
export function sourceAddress(peer: string | undefined, forwardedFor: readonly string[], trusted: BlockList | undefined): string | null {
  if (!peer) return null;
  let addr = normalizeIp(peer);
  if (!trusted || forwardedFor.length === 0 || !isTrusted(trusted, addr)) return addr;
  const hops = forwardedFor.join(',').split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hopAddress(hops[i]);
    if (hop === undefined) return addr;
    addr = hop;
    if (!isTrusted(trusted, hop)) return hop;
  }
  return addr;
}
