-- wrk script for `npm run bench:server`: each request carries a `key` header, cycling through
-- 10,000 distinct keys; at the end one line of JSON with the counts the benchmark reads.
local next_key = 0

request = function()
  next_key = (next_key + 1) % 10000
  return wrk.format(nil, nil, { key = tostring(next_key) })
end

done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"socketErrors":%d,"non2xx":%d,"latencyP50Us":%d,"latencyP99Us":%d}\n',
    summary.requests, summary.duration, errors.connect + errors.read + errors.write + errors.timeout, errors.status,
    latency:percentile(50), latency:percentile(99)))
end
