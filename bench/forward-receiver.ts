/**
 * The destination of bench/forward.ts, in its own process so it does not
 * share the bench's event loop: an HTTPS server (test CA certificate) that
 * answers 200 at once and remembers when each webhook-id arrived.
 * Messages: it sends {port} when listening; on 'report' it sends
 * {arrivals: [[webhookId, at], ...]} and forgets them.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { testCa } from '../test/helpers/https.ts';

const tls = testCa();
let arrivals: Array<[string, number]> = [];
const server = https.createServer({ key: tls.key, cert: tls.cert, keepAliveTimeout: 30_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    arrivals.push([String(req.headers['webhook-id'] ?? ''), performance.timeOrigin + performance.now()]);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
    res.end('{"ok":true}');
  });
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('message', (msg) => {
  if (msg === 'report') {
    process.send!({ arrivals });
    arrivals = [];
  } else if (msg === 'exit') {
    server.close();
    process.exit(0);
  }
});
