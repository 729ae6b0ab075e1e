import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { defaultHostResolver, type HostResolver } from './host-resolver.ts';

/**
 * IP address -> autonomous system, offline: the operator's CSV
 * (WEIR_ASN_DB, `first_ip,last_ip,asn,asn_org`) first, then the bundled
 * @ip-location-db/asn data (RouteViews + DB-IP, CC-BY-4.0). Both are loaded
 * lazily, on the first lookup, because the bundled table costs memory
 * (measured by loadStats(); docs/incidents.md has the figures) that a Weir
 * whose destinations never fail should not pay.
 *
 * IPv4 ranges are kept exactly as 32-bit numbers; IPv6 ranges by their top
 * 64 bits (a routed prefix is never longer than /64 in the data, so
 * nothing is lost in practice).
 */
export interface AsnInfo {
  asn: number;
  org: string;
}

interface Table {
  v4: { starts: Uint32Array; ends: Uint32Array; asns: Uint32Array; orgs: Uint32Array };
  v6: { starts: BigUint64Array; ends: BigUint64Array; asns: Uint32Array; orgs: Uint32Array };
  orgNames: string[];
}

export interface LoadStats {
  rows: number;
  ms: number;
  /** What the loaded table keeps in memory (bytes). */
  retainedBytes: number;
  /** Growth of heap plus array buffers across the load, the file's text (garbage afterwards) included. */
  heapGrowthBytes: number;
}

let bundled: Promise<Table> | undefined;
const operator = new Map<string, Promise<Table>>();
let bundledStats: LoadStats | undefined;

/** Splits one CSV line of four fields, the last possibly quoted (organisation names hold commas). */
function fields(line: string): [string, string, string, string] | undefined {
  const a = line.indexOf(',');
  const b = line.indexOf(',', a + 1);
  const c = line.indexOf(',', b + 1);
  if (a < 0 || b < 0 || c < 0) return undefined;
  let org = line.slice(c + 1).trim();
  if (org.startsWith('"') && org.endsWith('"')) org = org.slice(1, -1).replaceAll('""', '"');
  return [line.slice(0, a).trim(), line.slice(a + 1, b).trim(), line.slice(b + 1, c).trim(), org];
}

function ipv4ToNumber(ip: string): number {
  const p = ip.split('.').map(Number);
  return ((p[0] << 24) >>> 0) + (p[1] << 16) + (p[2] << 8) + p[3];
}

/** The top 64 bits of an IPv6 address (IPv4-mapped forms are handled by the caller). */
function ipv6Top64(ip: string): bigint {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  if (t.length > 0 && t[t.length - 1].includes('.')) {
    const n = ipv4ToNumber(t.pop()!);
    t.push((n >>> 16).toString(16), (n & 0xffff).toString(16));
  }
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  let v = 0n;
  for (let i = 0; i < 4; i++) v = (v << 16n) | BigInt(parseInt(groups[i] || '0', 16));
  return v;
}

/** Organisation names stored once each (80,000 names for 500,000 ranges), referred to by index. */
function orgInterner(): { orgNames: string[]; orgOf: (o: string) => number } {
  const index = new Map<string, number>();
  const orgNames: string[] = [];
  const orgOf = (o: string) => {
    let i = index.get(o);
    if (i === undefined) {
      i = orgNames.push(o) - 1;
      index.set(o, i);
    }
    return i;
  };
  return { orgNames, orgOf };
}

function build(rows: Array<{ v6: boolean; start: number | bigint; end: number | bigint; asn: number; org: string }>): Table {
  const { orgNames, orgOf } = orgInterner();
  const v4 = rows.filter((r) => !r.v6).sort((a, b) => Number(a.start) - Number(b.start));
  const v6 = rows.filter((r) => r.v6).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  return {
    v4: {
      starts: Uint32Array.from(v4, (r) => Number(r.start)),
      ends: Uint32Array.from(v4, (r) => Number(r.end)),
      asns: Uint32Array.from(v4, (r) => r.asn),
      orgs: Uint32Array.from(v4, (r) => orgOf(r.org)),
    },
    v6: {
      starts: BigUint64Array.from(v6, (r) => BigInt(r.start)),
      ends: BigUint64Array.from(v6, (r) => BigInt(r.end)),
      asns: Uint32Array.from(v6, (r) => r.asn),
      orgs: Uint32Array.from(v6, (r) => orgOf(r.org)),
    },
    orgNames,
  };
}

/** Parses `first_ip,last_ip,asn,asn_org` lines with addresses in text form (a header line or bad lines are skipped). */
export function parseAsnCsv(text: string): Table {
  const rows: Parameters<typeof build>[0] = [];
  for (const line of text.split('\n')) {
    const f = fields(line);
    if (!f) continue;
    const [first, last, asnText, org] = f;
    const asn = Number(asnText.replace(/^AS/i, ''));
    const kind = isIP(first);
    if (!Number.isInteger(asn) || kind === 0 || isIP(last) !== kind) continue;
    if (kind === 4) rows.push({ v6: false, start: ipv4ToNumber(first), end: ipv4ToNumber(last), asn, org });
    else rows.push({ v6: true, start: ipv6Top64(first), end: ipv6Top64(last), asn, org });
  }
  return build(rows);
}

type Ranges<T> = { starts: T; ends: T; asns: Uint32Array; orgs: Uint32Array };

/**
 * Parses a "-num" file (ranges as integers, sorted by start) straight into
 * typed arrays: no object per row, so loading allocates little beyond the
 * file's text, which is garbage once this returns.
 */
function parseNumFile<T extends Uint32Array | BigUint64Array>(text: string, make: (n: number) => T, value: (s: string) => T[number], orgOf: (o: string) => number): Ranges<T> {
  let lines = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
  if (!text.endsWith('\n')) lines++;
  const r = { starts: make(lines), ends: make(lines), asns: new Uint32Array(lines), orgs: new Uint32Array(lines) };
  let n = 0;
  for (let pos = 0; pos < text.length; ) {
    let eol = text.indexOf('\n', pos);
    if (eol < 0) eol = text.length;
    const f = fields(text.slice(pos, eol));
    pos = eol + 1;
    if (!f) continue;
    r.starts[n] = value(f[0]);
    r.ends[n] = value(f[1]);
    r.asns[n] = Number(f[2]);
    r.orgs[n] = orgOf(f[3]);
    n++;
  }
  return { starts: r.starts.subarray(0, n) as T, ends: r.ends.subarray(0, n) as T, asns: r.asns.subarray(0, n), orgs: r.orgs.subarray(0, n) };
}

async function loadBundled(): Promise<Table> {
  const started = performance.now();
  const before = process.memoryUsage();
  const dir = createRequire(import.meta.url).resolve('@ip-location-db/asn/package.json').replace(/package\.json$/, '');
  const { orgNames, orgOf } = orgInterner();
  // The "-num" files give ranges as integers: no address parsing at load.
  const v4 = parseNumFile(await readFile(dir + 'asn-ipv4-num.csv', 'utf8'), (n) => new Uint32Array(n), Number, orgOf);
  const v6 = parseNumFile(await readFile(dir + 'asn-ipv6-num.csv', 'utf8'), (n) => new BigUint64Array(n), (s) => BigInt(s) >> 64n, orgOf);
  const after = process.memoryUsage();
  const arrays = [v4.starts, v4.ends, v4.asns, v4.orgs, v6.starts, v6.ends, v6.asns, v6.orgs].reduce((sum, a) => sum + a.byteLength, 0);
  bundledStats = {
    rows: v4.starts.length + v6.starts.length,
    ms: Math.round(performance.now() - started),
    // what stays: the typed arrays and the organisation names (2 bytes a character plus a string header)
    retainedBytes: arrays + orgNames.reduce((sum, o) => sum + 2 * o.length + 32, 0),
    heapGrowthBytes: after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers),
  };
  return { v4, v6, orgNames };
}

/** What loading the bundled data cost, once it was loaded. */
export function loadStats(): LoadStats | undefined {
  return bundledStats;
}

function search<T extends number | bigint>(starts: ArrayLike<T>, ends: ArrayLike<T>, value: T): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (starts[mid] > value) hi = mid - 1;
    else if (ends[mid] < value) lo = mid + 1;
    else return mid;
  }
  return -1;
}

function find(table: Table, ip: string): AsnInfo | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const addr = mapped ? mapped[1] : ip;
  const kind = isIP(addr);
  if (kind === 4) {
    const i = search(table.v4.starts, table.v4.ends, ipv4ToNumber(addr));
    return i < 0 ? undefined : { asn: table.v4.asns[i], org: table.orgNames[table.v4.orgs[i]] };
  }
  if (kind === 6) {
    const i = search(table.v6.starts, table.v6.ends, ipv6Top64(addr));
    return i < 0 ? undefined : { asn: table.v6.asns[i], org: table.orgNames[table.v6.orgs[i]] };
  }
  return undefined;
}

/** The AS of an address: the operator's CSV first, then the bundled data. */
export async function asnOfAddress(ip: string, operatorCsv?: string): Promise<AsnInfo | undefined> {
  if (operatorCsv) {
    let t = operator.get(operatorCsv);
    if (!t) {
      t = readFile(operatorCsv, 'utf8').then(parseAsnCsv);
      operator.set(operatorCsv, t);
    }
    const hit = find(await t, ip);
    if (hit) return hit;
  }
  bundled ??= loadBundled();
  return find(await bundled, ip);
}

/**
 * The AS of a destination URL's host (a literal address, or the first
 * address the resolver gives: within 2 s, cached, see host-resolver.ts);
 * undefined when the host does not resolve or is in no table.
 */
export async function asnOfUrl(url: string, operatorCsv?: string, resolver: HostResolver = defaultHostResolver): Promise<AsnInfo | undefined> {
  let host: string;
  try {
    const u = new URL(url);
    if (u.protocol !== 'https:') return undefined;
    host = u.hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  let ip = host;
  if (isIP(host) === 0) {
    const resolved = await resolver.resolve(host);
    if (!resolved) return undefined;
    ip = resolved;
  }
  return asnOfAddress(ip, operatorCsv);
}
