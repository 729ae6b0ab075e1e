// The load generator of bench/ingest.ts, in its own process so that the
// server under test is not slowed by sharing an event loop with it.
// argv: url seconds connections bodyFile idsFile [rate]. With a rate (requests
// per second over all connections) the load is paced instead of as fast as
// the server answers. Prints one JSON line (with its own CPU seconds while
// autocannon ran).
import autocannon from 'autocannon';
import { readFileSync, writeFileSync } from 'node:fs';

const [url, seconds, connections, bodyFile, idsFile, rate] = process.argv.slice(2);
const body = readFileSync(bodyFile, 'utf8');
const ids: string[] = [];
const cpuBefore = process.cpuUsage();
const result = await autocannon({
  url,
  method: 'POST',
  connections: Number(connections),
  duration: Number(seconds),
  ...(rate ? { overallRate: Number(rate) } : {}),
  headers: { 'content-type': 'application/json' },
  requests: [
    {
      method: 'POST',
      body,
      // Every server answers {request_id}; keeping the ids lets the bench
      // check afterwards that everything acknowledged is really stored.
      onResponse: (status: number, text: string) => {
        if (status >= 200 && status < 300) ids.push(JSON.parse(text).request_id);
      },
    },
  ],
});
const cpu = process.cpuUsage(cpuBefore);
if (idsFile) writeFileSync(idsFile, ids.join('\n'));
process.stdout.write(
  JSON.stringify({
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    acked: ids.length,
    loadCpu: (cpu.user + cpu.system) / 1e6,
  }) + '\n',
);
