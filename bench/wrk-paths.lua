-- wrk script: each request GETs a random path from a file (one path per line, given after --),
-- and done() prints the summary as one JSON line prefixed WRK_JSON for bench/load.ts.
local paths = {}

function init(args)
  local file = args[1]
  if file == nil then error("wrk-paths.lua: pass the paths file after --") end
  for line in io.lines(file) do
    if #line > 0 then paths[#paths + 1] = line end
  end
  if #paths == 0 then error("wrk-paths.lua: no paths in " .. file) end
  -- Each thread gets its own Lua state: seed from the clock and this state's address.
  local addr = tonumber(string.match(tostring(paths), "0x(%x+)") or "0", 16) or 0
  math.randomseed(os.time() + addr % 1000003)
end

function request()
  return wrk.format(nil, paths[math.random(#paths)])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean))
end
