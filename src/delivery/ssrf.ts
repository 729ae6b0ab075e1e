import { lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';

/**
 * The SSRF guard: which addresses a forward may connect to. A forward goes
 * to a URL a tenant typed, from inside the operator's network, so without
 * this any tenant could reach the operator's loopback services, private
 * network or the cloud metadata endpoint (and its credentials).
 *
 * - `public`: allowed.
 * - `private`: loopback, RFC 1918, link-local, CGNAT, unique-local,
 *   multicast, unspecified, reserved, documentation and transition ranges
 *   (IPv4-mapped, NAT64, 6to4, Teredo) — refused unless the operator sets
 *   WEIR_ALLOW_PRIVATE_DESTINATIONS=1 for development.
 * - `metadata`: cloud instance-metadata addresses — always refused.
 */
export type AddressClass = 'public' | 'private' | 'metadata';

export interface Verdict {
  class: AddressClass;
  /** Why an address is not public, for the attempt's error message. */
  reason?: string;
}

const METADATA_V4 = new Map([
  ['169.254.169.254', 'cloud metadata (AWS, GCP, Azure, OpenStack)'],
  ['169.254.170.2', 'cloud metadata (AWS ECS task credentials)'],
  ['100.100.100.200', 'cloud metadata (Alibaba Cloud)'],
  ['168.63.129.16', 'cloud platform endpoint (Azure WireServer)'],
]);
const METADATA_V6 = new Map([
  [v6ToBigInt('fd00:ec2::254'), 'cloud metadata (AWS IPv6)'],
  [v6ToBigInt('fd00:ec2::23'), 'cloud metadata (AWS IPv6 DNS)'],
]);

// [first address, prefix length, reason]; anything not listed is public.
const PRIVATE_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'carrier-grade NAT (RFC 6598)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation (TEST-NET-1)'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation (TEST-NET-2)'],
  ['203.0.113.0', 24, 'documentation (TEST-NET-3)'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved (including broadcast)'],
];
const PRIVATE_V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::', 48, 'NAT64 (local use)'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:db8::', 32, 'documentation'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local (deprecated)'],
  ['ff00::', 8, 'multicast'],
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function v6ToBigInt(ip: string): bigint {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // a trailing dotted quad ("::ffff:127.0.0.1") is two 16-bit groups
  const dotted = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const n = v4ToInt(dotted[1]);
    text = text.slice(0, -dotted[1].length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(fill).fill('0'), ...tailGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || '0', 16)), 0n);
}

const V4_RANGES = PRIVATE_V4.map(([first, bits, reason]) => ({ first: v4ToInt(first), size: 2 ** (32 - bits), reason }));
const V6_RANGES = PRIVATE_V6.map(([first, bits, reason]) => ({ prefix: v6ToBigInt(first) >> BigInt(128 - bits), bits, reason }));

function classifyV4(ip: string): Verdict {
  const meta = METADATA_V4.get(ip);
  if (meta) return { class: 'metadata', reason: meta };
  const n = v4ToInt(ip);
  for (const r of V4_RANGES) if (n >= r.first && n < r.first + r.size) return { class: 'private', reason: r.reason };
  return { class: 'public' };
}

function v4FromBits(n: bigint): string {
  const v = Number(n & 0xffffffffn);
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join('.');
}

function classifyV6(ip: string): Verdict {
  const n = v6ToBigInt(ip);
  const meta = METADATA_V6.get(n);
  if (meta) return { class: 'metadata', reason: meta };
  // Addresses that embed an IPv4 address reach it through a translator or
  // the host's own stack: refused as a category, and a metadata address
  // inside one stays a metadata address (refused even in development).
  const embedded = (shift: bigint, reason: string): Verdict => {
    const inner = classifyV4(v4FromBits(n >> shift));
    if (inner.class === 'metadata') return inner;
    return { class: 'private', reason: `${reason} of ${v4FromBits(n >> shift)}` };
  };
  if (n >> 32n === 0xffffn) return embedded(0n, 'IPv4-mapped IPv6');
  if (n >> 32n === 0x0064ff9b0000000000000000n) return embedded(0n, 'NAT64');
  if (n >> 112n === 0x2002n) return embedded(80n, '6to4');
  for (const r of V6_RANGES) if (n >> BigInt(128 - r.bits) === r.prefix) return { class: 'private', reason: r.reason };
  return { class: 'public' };
}

/** Classifies one IP address in canonical text form (what URL parsing and DNS give). */
export function classifyAddress(ip: string): Verdict {
  const family = isIP(ip);
  if (family === 4) return classifyV4(ip);
  if (family === 6) return classifyV6(ip);
  return { class: 'private', reason: 'not an IP address' };
}

/** Whether a forward may connect to `ip` under the operator's setting. */
export function addressAllowed(ip: string, allowPrivate: boolean): Verdict & { allowed: boolean } {
  const v = classifyAddress(ip);
  return { ...v, allowed: v.class === 'public' || (v.class === 'private' && allowPrivate) };
}

/** The error a refused address raises inside the connector; the transport classifies it as `ssrf_refused`. */
export class SsrfRefusedError extends Error {
  readonly code = 'ERR_WEIR_SSRF';
  constructor(host: string, address: string, reason: string | undefined) {
    super(
      host === address
        ? `refused to connect to ${address}: ${reason ?? 'not a public address'}`
        : `refused to connect to ${host}: it resolves to ${address}, ${reason ?? 'not a public address'}`,
    );
    this.name = 'SsrfRefusedError';
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (getaddrinfo, like any client; honours /etc/hosts). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/**
 * Resolves `hostname` and checks EVERY answer: one refused answer refuses
 * the name, because a client that tries answers in turn (happy eyeballs)
 * could otherwise be steered onto it. The caller connects only to the
 * addresses returned here, so a second, different DNS answer (rebinding)
 * is never used.
 */
export async function resolveChecked(hostname: string, allowPrivate: boolean, resolver: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  const family = isIP(literal);
  const answers = family ? [{ address: literal, family }] : await resolver(hostname);
  if (answers.length === 0) throw Object.assign(new Error(`${hostname} has no addresses`), { code: 'ENOTFOUND' });
  for (const a of answers) {
    const v = addressAllowed(a.address, allowPrivate);
    if (!v.allowed) throw new SsrfRefusedError(hostname, a.address, v.reason);
  }
  return answers;
}
