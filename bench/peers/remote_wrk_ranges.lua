-- remote_wrk_ranges.lua - wrk's requests for bench/remote.sh: a ranged GET
-- per line of RANGES_FILE ("SHARD OFFSET LENGTH": a packed sample's bytes in
-- its tar shard), of RANGES_PREFIX .. SHARD, each thread in its own shuffled
-- order (seeded by thread number), going round the list as long as the run
-- lasts. The requests are formatted once, when a thread starts, so that the
-- Lua side costs wrk nothing per request. At the end it prints one JSON line:
--   {"requests": N, "duration_us": T, "bytes": B, "errors": E, "status_errors": S}
-- (errors: connect, read, write, timeout; status_errors: answers not 2xx/3xx).
-- wrk rather than h2load: h2load's -H headers are the same for every URI, so
-- it cannot give each request its own Range; wrk's Lua can.
--   RANGES_FILE=f RANGES_PREFIX=/bench/raw-200k.pack/ wrk -t 2 -c 256 -d 10s \
--       -s bench/peers/remote_wrk_ranges.lua http://10.77.25.2:8080/
local ranges, n, i = {}, 0, 0
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  local file = assert(os.getenv("RANGES_FILE"), "RANGES_FILE is not set")
  local prefix = os.getenv("RANGES_PREFIX") or "/"
  for l in io.lines(file) do
    local s, o, len = l:match("^(%S+) (%d+) (%d+)$")
    if s then
      n = n + 1
      ranges[n] = wrk.format("GET", prefix .. s,
        { Range = "bytes=" .. o .. "-" .. (tonumber(o) + tonumber(len) - 1) })
    end
  end
  math.randomseed(tid or 1)
  for k = n, 2, -1 do
    local j = math.random(k)
    ranges[k], ranges[j] = ranges[j], ranges[k]
  end
end

function request()
  i = i % n + 1
  return ranges[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "errors": %d, "status_errors": %d}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.timeout, e.status))
end
