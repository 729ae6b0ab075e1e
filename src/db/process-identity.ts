import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Who a process is beyond its pid, for the data-directory lock
 * (src/db/data-dir-lock.ts): the machine's boot id and the process's start
 * time as the kernel reports it, so a pid handed to another process, or a
 * pid from before a reboot, is not mistaken for the process that wrote it.
 */

export interface ProcessInfo {
  start: string;
  /** Epoch ms, to the second at least. */
  startedAtMs: number;
  zombie: boolean;
  command: string;
}

/** How this process looks at processes; replaceable so tests can run the macOS path on Linux. */
export interface ProcessProbe {
  bootId(): string | null;
  processInfo(pid: number): ProcessInfo | undefined | 'unknown';
}

function linuxBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

let bootTimeS: number | undefined;
/** Linux: what /proc/<pid>/stat says; undefined when there is no such process. */
function linuxProcessInfo(pid: number): ProcessInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // pid (comm) state ppid ... : comm may hold spaces and parentheses, so split after the last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  bootTimeS ??= Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1] ?? 0);
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    // a process that is exiting may no longer show its command line
  }
  // USER_HZ is 100 on every Linux architecture Node runs on
  return { start: startTicks, startedAtMs: (bootTimeS + Number(startTicks) / 100) * 1000, zombie: state === 'Z' || state === 'X', command };
}

function darwinBootId(): string | null {
  try {
    return execFileSync('sysctl', ['-n', 'kern.bootsessionuuid'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null;
  } catch {
    return null;
  }
}

/** Any Unix with ps: state, start time (`lstart`, to the second) and command line; undefined when there is no such process. */
export function psProcessInfo(pid: number): ProcessInfo | undefined {
  let out: string;
  try {
    out = execFileSync('ps', ['-ww', '-o', 'stat=,lstart=,command=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' },
    }).trim();
  } catch {
    return undefined; // ps exits 1 when the pid does not exist
  }
  if (!out) return undefined;
  // "Ss   Mon Nov 23 15:00:08 2026 node bin/weir.mjs serve"
  const parts = out.split(/\s+/);
  const start = parts.slice(1, 6).join(' ');
  return { start, startedAtMs: Date.parse(`${start} UTC`), zombie: parts[0].startsWith('Z'), command: parts.slice(6).join(' ') };
}

export const systemProbe: ProcessProbe =
  process.platform === 'linux'
    ? { bootId: linuxBootId, processInfo: linuxProcessInfo }
    : process.platform === 'darwin'
      ? { bootId: darwinBootId, processInfo: psProcessInfo }
      : {
          bootId: () => null,
          processInfo: (pid) => {
            try {
              process.kill(pid, 0);
              return 'unknown';
            } catch (err) {
              return (err as NodeJS.ErrnoException).code === 'EPERM' ? 'unknown' : undefined;
            }
          },
        };
