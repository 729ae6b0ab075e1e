// What every user command is given: where it writes, and the environment it
// reads. A module of its own so that commands.ts, which wires the commands,
// and each command's module can share the types without importing each
// other: they did, an import cycle (npm run check:layers reports cycles).

/** Where a command writes: stdout and stderr in the CLI, buffers in tests. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Raw bytes to stdout (requests show --raw). */
  bytes(b: Buffer): void;
}

/** The environment variables a command reads (process.env in the CLI). */
export type Env = Record<string, string | undefined>;
