import { PGlite } from '@electric-sql/pglite';
import { fdatasyncSync } from 'node:fs';

/**
 * PGlite's default start makes no commit reach the disk itself: PostgreSQL
 * runs with `-F` (fsync off), and even with fsync on nothing would be
 * flushed, because the Emscripten Node file system (NODEFS) has no fsync
 * stream operation (fsync() finds none and returns) and its fdatasync()
 * system call does nothing. With `durable`, PostgreSQL starts without `-F`,
 * syncs the WAL with fsync() (wal_sync_method=fsync, the call that reaches
 * the stream operation), and NODEFS gets the operation, as fdatasync(2) on
 * the real file: one flush per commit (a group commit of captures is one
 * commit), plus the data files at each checkpoint.
 */
export function pgliteStartParams(durable: boolean): string[] | undefined {
  if (!durable) return undefined;
  return [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', 'wal_sync_method=fsync'];
}

interface NodeFsModule {
  NODEFS?: { stream_ops?: { fsync?: (stream: { nfd?: number }) => void } };
}

/**
 * Gives NODEFS its fsync. Called right after PGlite.create: the start-up
 * itself (and the end-of-recovery checkpoint after a crash) ran before it,
 * so its writes are flushed by the first checkpoint after it instead.
 */
export function enableNodeFsync(pg: PGlite): void {
  const mod = (pg as unknown as { mod?: NodeFsModule }).mod;
  const ops = mod?.NODEFS?.stream_ops;
  if (!ops) throw new Error('WEIR_PGLITE_FSYNC: this PGlite build exposes no NODEFS stream operations to add fsync to');
  ops.fsync = (stream) => {
    if (stream.nfd !== undefined) fdatasyncSync(stream.nfd);
  };
}
