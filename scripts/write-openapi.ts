/**
 * Writes the OpenAPI document the app serves at /v1/openapi.json to a file
 * (default dist/openapi.json), building the app on an in-memory database without
 * listening. `npm run lint:openapi` and `npm run generate:client` read it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { openApiDocument } from '../src/http/openapi-document.ts';

const out = process.argv[2] ?? 'dist/openapi.json';
const doc = await openApiDocument(process.env.WEIR_PUBLIC_URL ?? 'https://weir.example.com');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
console.log(`wrote ${out}`);
