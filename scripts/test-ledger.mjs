// A reporter for Node's test runner that keeps a ledger: per test file, the
// tests that were queued and the tests whose result arrived. `scripts/test.mjs`
// runs it beside the readable reporter and fails the run when the two differ,
// so a test that never reported (a child cut off mid-stream, a runner that
// exits before its reporters drain) fails the run instead of vanishing from
// the count. It also notes when each file's first and last events arrived, so
// the slowest files can be shown against the per-file time limit.
//
// Output: one JSON object, written when the run ends. Its absence means the
// runner itself never finished reporting.

export default async function* ledger(source) {
  const files = new Map();
  // The parent queues every file's own entry at the start, so a file's time
  // runs from its first event of its own tests to its last.
  const entry = (file, ownTest = true) => {
    let e = files.get(file);
    if (!e) {
      e = { queued: 0, reported: 0, failed: 0, first: undefined, last: undefined, missing: [] };
      files.set(file, e);
    }
    if (ownTest) {
      e.first ??= Date.now();
      e.last = Date.now();
    }
    return e;
  };
  // A file's own test (nesting 0, named by its path) is queued by the parent
  // and reported only when the file fails as a whole (a crash or a timeout).
  const isFileItself = (data) => data.nesting === 0 && data.name === data.file;
  const open = new Map();
  const key = (data) => `${data.file}\u0000${data.nesting}\u0000${data.name}`;

  for await (const event of source) {
    const data = event.data ?? {};
    if (!data.file) continue;
    if (event.type === 'test:enqueue') {
      if (isFileItself(data)) {
        entry(data.file, false);
        continue;
      }
      entry(data.file).queued++;
      open.set(key(data), (open.get(key(data)) ?? 0) + 1);
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const e = entry(data.file, !isFileItself(data));
      if (event.type === 'test:fail') e.failed++;
      if (isFileItself(data)) continue;
      e.reported++;
      const n = open.get(key(data)) ?? 0;
      if (n > 1) open.set(key(data), n - 1);
      else open.delete(key(data));
    }
  }
  for (const k of open.keys()) {
    const [file, nesting, name] = k.split('\u0000');
    files.get(file)?.missing.push(`${'  '.repeat(Number(nesting))}${name}`);
  }
  const out = {};
  for (const [file, e] of files) {
    out[file] = { queued: e.queued, reported: e.reported, failed: e.failed, seconds: e.first === undefined ? 0 : Math.round((e.last - e.first) / 100) / 10, missing: e.missing.slice(0, 20) };
  }
  yield JSON.stringify({ files: out }) + '\n';
}
