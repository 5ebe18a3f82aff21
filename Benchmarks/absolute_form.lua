-- wrk script for the proxy benchmark.
--
--   wrk -c32 -t2 -d4s -s absolute_form.lua http://PROXY_HOST:PORT/ -- TARGET [HOST]
--
-- A forward proxy must be sent absolute-form request lines
-- (`GET http://127.0.0.1:9000/small.json HTTP/1.1`), which wrk does not do on
-- its own: TARGET becomes the request target and HOST the Host header. For a
-- reverse proxy (nginx) pass the plain path and no HOST.
--
-- Setting wrk.path/wrk.headers in init (and defining no request()) keeps the
-- request static: wrk formats it once with wrk.format, so the Lua layer costs
-- nothing per request and every proxy is driven by the same client work.

function init(args)
   if args[1] ~= nil then
      wrk.path = args[1]
   end
   if args[2] ~= nil then
      wrk.headers["Host"] = args[2]
   end
end

-- One machine-readable line; latencies in microseconds.
function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
      "connect_errors=%d read_errors=%d write_errors=%d status_errors=%d timeouts=%d\n",
      summary.requests, summary.duration, summary.bytes,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      e.connect, e.read, e.write, e.status, e.timeout))
end
