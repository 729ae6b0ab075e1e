/**
 * The local server of bench/agent.ts, in its own process: the same handler
 * behind HTTP (what the agent forwards to) and HTTPS (test CA; the https
 * destination's equivalent). Answers 200 at once and remembers when each
 * webhook-id arrived. Sends {http, https} ports when listening; on 'report'
 * sends {arrivals: [[webhookId, at], ...]} and forgets them.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { testCa } from '../test/helpers/https.ts';

const tls = testCa();
let arrivals: Array<[string, number]> = [];
const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
  req.resume();
  req.on('end', () => {
    arrivals.push([String(req.headers['webhook-id'] ?? ''), performance.timeOrigin + performance.now()]);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
    res.end('{"ok":true}');
  });
};
const plain = http.createServer({ keepAliveTimeout: 30_000 }, handler);
const secure = https.createServer({ key: tls.key, cert: tls.cert, keepAliveTimeout: 30_000 }, handler);
await Promise.all([plain, secure].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
process.send!({ http: (plain.address() as AddressInfo).port, https: (secure.address() as AddressInfo).port });
process.on('message', (msg) => {
  if (msg === 'report') {
    process.send!({ arrivals });
    arrivals = [];
  } else if (msg === 'exit') process.exit(0);
});
