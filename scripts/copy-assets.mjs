#!/usr/bin/env node
// `npm run build` compiles src/ to dist/ with tsc, which copies no files that
// are not TypeScript: the SQL migrations and the dashboard's static assets
// are copied here so `node dist/cli.js serve` finds them beside the code.
import { cpSync } from 'node:fs';

for (const dir of ['db/migrations', 'dashboard/public']) {
  cpSync(`src/${dir}`, `dist/${dir}`, { recursive: true });
}
