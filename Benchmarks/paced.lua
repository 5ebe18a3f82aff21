-- wrk script: absolute_form.lua's requests, each connection waiting DELAY ms between them,
-- for a steady rate (connections × 1000 / DELAY per second, less the response time):
--
--   wrk -c4 -t1 -d8s -s paced.lua http://PROXY/ -- TARGET DELAY_MS

local pause = 2

function init(args)
   wrk.path = args[1]
   if args[2] ~= nil then pause = tonumber(args[2]) end
end

function delay()
   return pause
end

function done(summary, latency, requests)
   io.write(string.format("RESULT requests=%d duration_us=%d\n", summary.requests, summary.duration))
end
