import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createLoop } from '../background/scheduler.ts';
import { systemProbe, type ProcessProbe } from './process-identity.ts';

/**
 * One Weir process per PGlite folder (PGlite is a single-process database:
 * two processes on one folder would corrupt it).
 *
 * Node has no flock(), and the packages that add it build native code, which
 * would make `npm install` need a compiler on a fresh laptop. So the lock is
 * an owner record, `weir.lock`, that names its process beyond its pid: the
 * boot id of the machine, the process's start time as the kernel reports it
 * (/proc/<pid>/stat on Linux, `ps -o lstart=` on macOS), the host name and
 * the command line. A record is the live owner's only if a process with that
 * pid exists now, on this boot, with that start time and is not a zombie;
 * so a lock left by a killed process is taken over at once, even when its
 * pid has been handed to another process since (after a reboot, pids start
 * again from the bottom). A record written on another host (a folder shared
 * between containers or machines) cannot be checked that way: there the
 * owner's heartbeat decides, the file's mtime renewed every HEARTBEAT_MS, and
 * a record not renewed for STALE_MS is taken over.
 */

export const LOCK_FILE = 'weir.lock';
const HEARTBEAT_MS = 10_000;
const STALE_MS = 60_000;

interface OwnerRecord {
  pid: number;
  host?: string;
  boot_id?: string | null;
  /** The kernel's start time of the process, in the platform's own format (see processInfo). */
  start?: string | null;
  command?: string;
  locked_at?: string;
}

export class DataDirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly owner: { pid: number; command: string; host: string | undefined },
  ) {
    const lockPath = join(dir, LOCK_FILE);
    const where = owner.host && owner.host !== hostname() ? ` on host ${owner.host}` : '';
    super(
      `WEIR_DATA_DIR ${dir} is in use by another Weir process: pid ${owner.pid}${where} (${owner.command || 'command line unknown'}). ` +
        `The embedded database allows one process. Stop that process first, or use DATABASE_URL to run several nodes. ` +
        `If that process is not a Weir using this folder, the lock is wrong: delete ${lockPath} and start again.`,
    );
  }
}

type Verdict = { live: true; pid: number; command: string; host: string | undefined } | { live: false; why: string };

function parse(text: string): OwnerRecord | undefined {
  const t = text.trim();
  // the format before owner records: the bare pid
  if (/^\d+$/.test(t)) return { pid: Number(t) };
  try {
    const r = JSON.parse(t) as OwnerRecord;
    return Number.isInteger(r?.pid) && r.pid > 0 ? r : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the record in the lock file names a process that holds the folder now. */
function judge(text: string, mtimeMs: number, probe: ProcessProbe, now: number): Verdict {
  const rec = parse(text);
  if (!rec) {
    // created with 'wx' and not yet written (file systems without hard links), or garbage
    return now - mtimeMs < 5_000 ? { live: true, pid: 0, command: 'a process writing the lock file', host: undefined } : { live: false, why: 'unreadable lock file' };
  }
  if (rec.host !== undefined && rec.host !== hostname()) {
    // another machine or container: its processes are not ours to see; its heartbeat tells
    return now - mtimeMs < STALE_MS ? { live: true, pid: rec.pid, command: rec.command ?? '', host: rec.host } : { live: false, why: `no heartbeat from host ${rec.host} for ${Math.round((now - mtimeMs) / 1000)} s` };
  }
  const boot = probe.bootId();
  if (rec.boot_id && boot && rec.boot_id !== boot) return { live: false, why: 'written before the machine last booted' };
  const info = probe.processInfo(rec.pid);
  if (info === undefined) return { live: false, why: `pid ${rec.pid} is gone` };
  if (info === 'unknown') {
    // a platform where a process cannot be identified beyond its pid: the heartbeat tells
    return now - mtimeMs < STALE_MS ? { live: true, pid: rec.pid, command: rec.command ?? '', host: undefined } : { live: false, why: 'no heartbeat' };
  }
  if (info.zombie) return { live: false, why: `pid ${rec.pid} has exited` };
  if (rec.start != null) {
    if (info.start !== rec.start) return { live: false, why: `pid ${rec.pid} is now another process` };
  } else if (info.startedAtMs > mtimeMs + 1_000) {
    // a record of the pid-only format: a process started after the lock was written cannot have written it
    return { live: false, why: `pid ${rec.pid} started after the lock was written` };
  }
  return { live: true, pid: rec.pid, command: info.command, host: undefined };
}

function readLock(path: string): { text: string; mtimeMs: number } | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    return { text, mtimeMs: statSync(path).mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Creates `path` holding `content` only if it does not exist; false when it does. Never leaves a half-written lock behind on file systems with hard links. */
function createExclusive(path: string, content: string): boolean {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, content);
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    // no hard links here: 'wx' instead (a reader may briefly see it empty, see judge)
    try {
      writeFileSync(path, content, { flag: 'wx' });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
  }
}

/**
 * Moves a stale lock out of the way, unless it changed since it was judged
 * (another starter took it over first): then it is put back.
 */
function removeStale(path: string, judged: string): void {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (readFileSync(aside, 'utf8') !== judged) {
    try {
      linkSync(aside, path);
    } catch {
      // someone else created a lock meanwhile; theirs stands
    }
  }
  unlinkSync(aside);
}

export interface DataDirLock {
  /** Stops the heartbeat and removes the lock file if it is still ours. */
  release(): void;
  /** True once the heartbeat found the folder owned by another process: nothing may write it from then on. */
  readonly lost: boolean;
}

export interface LockOptions {
  /** How long to wait for an owner that looks alive to go away (one killed a moment ago may still be exiting). */
  waitMs?: number;
  probe?: ProcessProbe;
  /**
   * Told once when the heartbeat finds the folder owned by another process
   * (its record in the lock file): this process must stop writing the
   * database at once. Called at most once; `lost` is true from then on.
   */
  onLost?: (msg: string) => void;
  /** Told when the lock file was deleted and this process wrote its record again (it still owns the folder). */
  onRestored?: (msg: string) => void;
  /** How often the heartbeat runs (default 10 s; tests use less). */
  heartbeatMs?: number;
  /** Told when a stale lock is taken over, and why it was stale. */
  onTakeover?: (msg: string) => void;
}

export async function lockDataDir(dir: string, opts: LockOptions = {}): Promise<DataDirLock> {
  const probe = opts.probe ?? systemProbe;
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  const self = probe.processInfo(process.pid);
  const record: OwnerRecord = {
    pid: process.pid,
    host: hostname(),
    boot_id: probe.bootId(),
    start: self && self !== 'unknown' ? self.start : null,
    command: process.argv.join(' '),
    locked_at: new Date().toISOString(),
  };
  const content = JSON.stringify(record) + '\n';
  const deadline = Date.now() + (opts.waitMs ?? 3_000);
  for (;;) {
    if (createExclusive(path, content)) break;
    const found = readLock(path);
    if (!found) continue;
    const verdict = judge(found.text, found.mtimeMs, probe, Date.now());
    if (!verdict.live) {
      opts.onTakeover?.(`taking over the lock of WEIR_DATA_DIR ${dir}: ${verdict.why}`);
      removeStale(path, found.text);
      continue;
    }
    if (Date.now() >= deadline) throw new DataDirLockedError(dir, verdict);
    await new Promise((r) => setTimeout(r, 100));
  }

  // The heartbeat renews the mtime (what another host judges by) and checks
  // the file is still ours. Another process's record means it judged ours
  // stale and took the folder: from then on it writes the database, so this
  // process must not write another byte (two writers corrupt it). Going on
  // "with a warning" is not an option; the owner of the lock decides what
  // stopping means (src/db/open.ts fences the database, the server exits).
  let lost = false;
  const loseTo = (why: string) => {
    if (lost) return;
    lost = true;
    void heartbeat.stop();
    opts.onLost?.(`lost the lock of WEIR_DATA_DIR ${dir}: ${why}; this process stops writing the embedded database`);
  };
  const beat = () => {
    if (lost) return;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return; // unreadable for now: the next beat tries again
      // Deleted (by hand, or a cleaner of temporary folders): nobody else
      // took it, so write our record again; if another process got there
      // first, the folder is theirs.
      try {
        if (createExclusive(path, content)) {
          opts.onRestored?.(`the lock file ${path} was deleted; wrote this process's record again`);
          return;
        }
      } catch {
        return; // the next beat tries again
      }
      const now = readLock(path);
      if (now && now.text !== content) loseTo(`the lock file ${path} was deleted and another process wrote its own (${describeOwner(now.text)})`);
      return;
    }
    if (text !== content) return loseTo(`the lock file ${path} now names another process (${describeOwner(text)})`);
    try {
      const now = new Date();
      utimesSync(path, now, now);
    } catch {
      // the next beat renews it
    }
  };
  const heartbeat = createLoop({ name: 'data_dir_lock', everyMs: opts.heartbeatMs ?? HEARTBEAT_MS, pass: async () => beat() });
  heartbeat.start();

  return {
    get lost() {
      return lost;
    },
    release() {
      void heartbeat.stop();
      if (lost) return;
      try {
        if (readFileSync(path, 'utf8') === content) unlinkSync(path);
      } catch {
        // already gone
      }
    },
  };
}

function describeOwner(text: string): string {
  const rec = parse(text);
  if (!rec) return 'an unreadable record';
  return `pid ${rec.pid}${rec.host && rec.host !== hostname() ? ` on host ${rec.host}` : ''}`;
}
