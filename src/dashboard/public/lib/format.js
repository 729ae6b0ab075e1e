// Formatting shared by the pages: sizes, times and durations.

export function formatBytes(n) {
  if (n === null || n === undefined) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A timestamp in the browser's locale, to the second. */
export function formatTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** "12 s ago", "3 min ago", "2 h ago", else the date. */
export function timeAgo(iso, now = Date.now()) {
  if (!iso) return '';
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return formatTime(iso);
}

/** A duration in seconds as "45 s", "12 min", "3 h 20 min". */
export function formatDuration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

export function plural(n, one, many = one + 's') {
  return `${n} ${n === 1 ? one : many}`;
}

/** A short timestamp for tables: "Nov 23, 18:51" this year, "Nov 23, 2025" before. */
export function formatShortTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const thisYear = d.getFullYear() === new Date().getFullYear();
  return thisYear
    ? d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hour12: false })
    : d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

/**
 * An id shortened for a table cell: its last 8 characters. UUIDv7s made
 * close together share their leading time prefix (`01a2128…` for every row),
 * so the random tail is the part that tells two apart. The full id goes in
 * the cell's title and link.
 */
export function shortId(id) {
  return id ? '…' + id.slice(-8) : '';
}
