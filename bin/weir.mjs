#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so `npm start` works right after
// `npm install` with no build step. `npm run build` emits dist/ for those who
// prefer `node dist/cli.js`.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
