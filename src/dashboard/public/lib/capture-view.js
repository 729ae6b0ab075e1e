// How a captured request is shown and reproduced: body decoding (JSON, form,
// XML), a hex dump, and "copy as curl". Pure functions with no imports, so
// the tests can run them in Node too (the curl command through a real bash
// and curl, byte for byte).

/** The body's bytes from GET /v1/requests/:id (text as UTF-8, else base64). */
export function bodyBytes(capture) {
  if (capture.body_encoding === 'base64') {
    const bin = atob(capture.body);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  return new TextEncoder().encode(capture.body);
}

const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * JSON re-indented by two spaces, every token kept as written (numbers are
 * not parsed, so 12345678901234567890 and 1.10 stay what was sent).
 * Answers null when the text is not JSON.
 */
export function indentJson(text) {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  let out = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (JSON_SPACE.has(c)) continue;
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '{' || c === '[') {
      let j = i + 1;
      while (JSON_SPACE.has(text[j])) j++;
      if (text[j] === (c === '{' ? '}' : ']')) {
        out += c + text[j];
        i = j;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += ',' + newline();
    else if (c === ':') out += ': ';
    else out += c;
  }
  return out;
}

/** The fields of a form-urlencoded body, in order, duplicates kept ('+' is a space, as forms encode it). */
export function formFields(text) {
  return [...new URLSearchParams(text)].map(([name, value]) => ({ name, value }));
}

/**
 * XML indented by two spaces (an element holding only text stays on one
 * line). Answers null when the text is not well-formed XML.
 */
export function indentXml(text, parse = (t) => new DOMParser().parseFromString(t, 'application/xml')) {
  const doc = parse(text);
  if (!doc || doc.getElementsByTagName('parsererror').length > 0) return null;
  const tokens = text.match(/<!\[CDATA\[[\s\S]*?\]\]>|<!--[\s\S]*?-->|<[^>]+>|[^<]+/g) ?? [];
  const lines = [];
  let depth = 0;
  const pad = () => '  '.repeat(Math.max(0, depth));
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const isOpen = /^<[^/!?]/.test(t) && !t.endsWith('/>');
    if (t.startsWith('</')) {
      depth--;
      lines.push(pad() + t);
    } else if (isOpen) {
      // <a>text</a> on one line
      if (tokens[i + 1] !== undefined && !tokens[i + 1].startsWith('<') && tokens[i + 2]?.startsWith('</')) {
        lines.push(pad() + t + tokens[i + 1].trim() + tokens[i + 2]);
        i += 2;
      } else if (tokens[i + 1]?.startsWith('</')) {
        lines.push(pad() + t + tokens[i + 1]);
        i += 1;
      } else {
        lines.push(pad() + t);
        depth++;
      }
    } else if (t.startsWith('<')) {
      lines.push(pad() + t);
    } else if (t.trim() !== '') {
      lines.push(pad() + t.trim());
    }
  }
  return lines.join('\n');
}

/**
 * The pretty view of a body: { kind: 'json' | 'form' | 'xml' | 'text' | 'binary' | 'empty', text?, fields? }.
 * The content type decides first; a body that looks like JSON or XML is shown as such without one.
 */
/** Text longer than this is shown cut, as text (indenting or laying out megabytes would freeze the tab). */
export const SHOW_MAX = 1024 * 1024;

export function prettyBody(capture, parseXml) {
  if (capture.body_size === 0) return { kind: 'empty' };
  if (capture.body_encoding !== 'utf8') return { kind: 'binary' };
  const type = (capture.content_type ?? '').toLowerCase();
  const text = capture.body;
  if (text.length > SHOW_MAX) return { kind: 'text', text: text.slice(0, SHOW_MAX), cut: true };
  const head = text.trimStart()[0];
  if (type.includes('json') || (!type.includes('xml') && (head === '{' || head === '['))) {
    const json = indentJson(text);
    if (json !== null) return { kind: 'json', text: json };
  }
  if (type.startsWith('application/x-www-form-urlencoded')) return { kind: 'form', fields: formFields(text) };
  if (type.includes('xml') || head === '<') {
    try {
      const xml = indentXml(text, parseXml);
      if (xml !== null) return { kind: 'xml', text: xml };
    } catch {
      // not XML after all
    }
  }
  return { kind: 'text', text };
}

/** A hex dump: offset, 16 bytes in two groups of 8, and the printable ASCII. */
export function hexDump(bytes, max = 65536) {
  const n = Math.min(bytes.length, max);
  const lines = [];
  for (let off = 0; off < n; off += 16) {
    const row = bytes.subarray(off, Math.min(off + 16, n));
    let hex = '';
    let ascii = '';
    for (let i = 0; i < 16; i++) {
      if (i === 8) hex += ' ';
      hex += i < row.length ? row[i].toString(16).padStart(2, '0') + ' ' : '   ';
      if (i < row.length) ascii += row[i] >= 0x20 && row[i] < 0x7f ? String.fromCharCode(row[i]) : '.';
    }
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return lines.join('\n');
}

// ---- copy as curl ----

const SAFE = /^[\x20-\x7e]*$/;

/** A POSIX single-quoted word (every byte literal); only for text whose bytes are the clipboard's UTF-8. */
function singleQuote(s) {
  return "'" + s.replace(/'/g, "'\\''") + "'";
}

/** bash/zsh $'…' quoting of raw bytes: printable ASCII as is, every other byte as \xHH. Cannot hold a NUL byte. */
function ansiQuote(bytes) {
  let out = "$'";
  for (const b of bytes) {
    if (b === 0x5c) out += '\\\\';
    else if (b === 0x27) out += "\\'";
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += '\\x' + b.toString(16).padStart(2, '0');
  }
  return out + "'";
}

/** A header value as Weir stores it: one character per byte (Latin-1). */
function latin1Bytes(s) {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** Quotes a word whose characters are bytes (header names and values, URLs). */
function quoteLatin1(s) {
  return SAFE.test(s) ? singleQuote(s) : ansiQuote(latin1Bytes(s));
}

// Headers curl computes itself for the request it sends; copying them would contradict it.
const SKIP_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer']);

/** The largest body put into the command itself; above it (or with a NUL byte) the command reads a file. */
export const INLINE_BODY_MAX = 64 * 1024;

/**
 * A curl command that sends the captured request again to `url` (default:
 * where it was captured): same method, headers in order with duplicates,
 * and the exact body bytes. Answers { command, file } where file is the name
 * the command reads the body from (to be downloaded first), or null when the
 * body is in the command. The command is for bash or zsh ($'…' quoting).
 */
export function curlCommand(capture, url, { fileName = 'body.bin' } = {}) {
  const bytes = bodyBytes(capture);
  const method = capture.method;
  const names = new Set(capture.headers.map((h) => h.name.toLowerCase()));
  const parts = ['curl'];
  let file = null;
  const hasBody = bytes.length > 0 || names.has('content-length') || names.has('transfer-encoding');
  if (method === 'HEAD') parts.push('--head');
  else if (!(method === 'GET' && !hasBody) && !(method === 'POST' && hasBody)) parts.push('-X ' + quoteLatin1(method));
  parts.push(quoteLatin1(url));
  for (const h of capture.headers) {
    if (SKIP_HEADERS.has(h.name.toLowerCase())) continue;
    // "Name:" would remove the header; "Name;" sends it empty
    parts.push('-H ' + quoteLatin1(h.value === '' ? `${h.name};` : `${h.name}: ${h.value}`));
  }
  // curl adds these itself unless told not to; the capture did not have them
  if (!names.has('user-agent')) parts.push("-H 'User-Agent:'");
  if (!names.has('accept')) parts.push("-H 'Accept:'");
  if (hasBody) {
    if (!names.has('content-type')) parts.push("-H 'Content-Type:'");
    if (bytes.length > INLINE_BODY_MAX || bytes.includes(0)) {
      file = fileName;
      // curl would add "Expect: 100-continue" to a large upload
      if (!names.has('expect')) parts.push("-H 'Expect:'");
      parts.push('--data-binary ' + singleQuote('@' + fileName));
    } else if (capture.body_encoding === 'utf8' && !/[\x00-\x08\x0b-\x1f\x7f]/.test(capture.body)) {
      parts.push('--data-raw ' + singleQuote(capture.body));
    } else {
      parts.push('--data-raw ' + ansiQuote(bytes));
    }
  }
  return { command: parts.join(' \\\n  '), file };
}

/** Where the request was captured: the ingest URL plus its path and query. */
export function captureUrl(capture, ingestUrl) {
  return ingestUrl + capture.path + (capture.query ? '?' + capture.query : '');
}
