import { isUtf8 } from 'node:buffer';

/** Columns padded to their widest cell: what `ls` commands print without --json. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

/**
 * A captured body for a terminal: JSON indented, form fields one per line,
 * other text as is, binary as a note (use --raw for the bytes).
 */
export function prettyBody(body: Buffer, contentType: string | null): string {
  if (body.length === 0) return '(empty body)';
  if (!isUtf8(body)) return `(${body.length} bytes of binary ${contentType ?? 'data'}; --raw writes the bytes)`;
  const text = body.toString('utf8');
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  }
  if (type === 'application/x-www-form-urlencoded') {
    return [...new URLSearchParams(text)].map(([k, v]) => `${k} = ${v}`).join('\n');
  }
  return text;
}
