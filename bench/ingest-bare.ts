// The baseline of bench/ingest.ts: the least an HTTP receiver can do with
// node:http — read the whole body, answer 200 with a JSON id — and nothing
// stored. Prints its port on the first line of stdout.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    Buffer.concat(chunks);
    const payload = JSON.stringify({ request_id: randomUUID() });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
