-- The wrk script of bench/ingest-load.ts: POSTs the 1 KiB JSON body of
-- BENCH_BODY_FILE and keeps the request_id of every 2xx answer, so the bench
-- can check afterwards that everything acknowledged is stored.
-- With BENCH_RATE (requests per second over all connections) each connection
-- waits a random, exponentially distributed time before its next request:
-- Poisson arrivals at that rate instead of as fast as the server answers.
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
wrk.headers["Content-Type"] = "application/json"
f:close()
-- BENCH_SIGNATURE (BENCH_VERIFY=stripe): the body's Stripe-Signature, the same on every request
local signature = os.getenv("BENCH_SIGNATURE")
if signature and signature ~= "" then
  wrk.headers["Stripe-Signature"] = signature
end

local rate = tonumber(os.getenv("BENCH_RATE") or "")
local connections = tonumber(os.getenv("BENCH_CONNECTIONS") or "1")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  ids = {}
  count = 0
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 100000)
end

if rate then
  local mean = 1000 * connections / rate
  function delay()
    return -mean * math.log(1 - math.random())
  end
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    count = count + 1
    ids[count] = body:match('"request_id":"([^"]+)"')
  end
end

-- This process's CPU seconds so far (Linux /proc; 0 elsewhere), as the
-- bench reports the load generator's CPU per request.
function cpuSeconds()
  local stat = io.open("/proc/self/stat", "r")
  if not stat then return 0 end
  local fields = {}
  for field in stat:read("*a"):match("%) (.*)"):gmatch("%S+") do table.insert(fields, field) end
  stat:close()
  return (tonumber(fields[12]) + tonumber(fields[13])) / 100
end

-- After the run: the ids go to BENCH_IDS_FILE, the figures to stdout as one
-- JSON line that bench/ingest-load.ts reads.
function done(summary, latency, requests)
  local out = os.getenv("BENCH_IDS_FILE")
  local acked = 0
  local file = out and out ~= "" and assert(io.open(out, "wb"))
  for _, thread in ipairs(threads) do
    local got = thread:get("ids")
    for i = 1, #got do
      if file then file:write(got[i], "\n") end
    end
    acked = acked + #got
  end
  if file then file:close() end
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"seconds":%f,"p50":%f,"p99":%f,"errors":%d,"timeouts":%d,"non2xx":%d,"acked":%d,"loadCpu":%f}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.connect + e.read + e.write, e.timeout, e.status, acked, cpuSeconds()))
end
