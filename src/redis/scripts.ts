/**
 * The Lua scripts that keep token buckets in Redis, with the semantics of `TokenBucket`
 * (x/time/rate's `Limiter`) on Redis `TIME` — the one clock every process agrees on. A bucket is
 * one string, `t at ev [r]`: its tokens, the instant they count at, the latest time to act of any
 * reservation, and a shared rate when `setRate` has set one. A missing key is a full bucket: every
 * write sets the key to expire when the bucket will be full again, so an idle quota costs nothing.
 *
 * Instants are whole microseconds of Redis time (times to act rounded up: never early), so they
 * are written as integers; formatting a float (`%.17g`, exact both ways) costs a Lua script in
 * Redis several times more, and a reservation would otherwise spend most of its time on it. Numbers
 * travel as text both ways: Redis turns a Lua number in a reply into an integer.
 */

/** A script and the command name it is defined under (ioredis `defineCommand`: EVALSHA, EVAL after a NOSCRIPT). */
export interface RedisScript {
  readonly name: string;
  readonly lua: string;
}

const PRELUDE = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- A wait in whole microseconds, rounded up; 'inf' when it never ends.
local function us(x)
  if x == math.huge then return 'inf' end
  return string.format('%d', math.ceil(x))
end

-- A bucket at now: its tokens (refilled, capped at burst; a clock reading earlier than the last
-- adds nothing), the instant they count at, the latest time to act, the rate in force (per second,
-- and as text), the shared rate's text when one is set (else nil), and whether the key exists.
local function load(key, rate_text, burst, now)
  local s = redis.call('GET', key)
  if not s then
    return burst, now, now, tonumber(rate_text), rate_text, nil, false
  end
  local ts, ats, evs, shared = string.match(s, '^(%S+) (%S+) (%S+) ?(%S*)$')
  if shared == '' then shared = nil end
  local text = shared or rate_text
  local r = tonumber(text)
  local t, at = tonumber(ts), tonumber(ats)
  if now > at then
    t = math.min(burst, t + (now - at) * r / 1000000)
    at = now
  end
  return t, at, tonumber(evs), r, text, shared, true
end

-- Stores a bucket to expire when it is full again (a full one is deleted), or to stay keep_ms at
-- least while it holds a shared rate; at rate 0 it never refills, so it stays. Returns the tokens
-- as written (a float is formatted once: it costs more than the rest of the write).
local function save(key, t, at, ev, r, shared, burst, now, keep_ms)
  local full_in_ms = 0
  if t < burst then
    if r <= 0 then
      full_in_ms = -1
    else
      full_in_ms = math.min((burst - t) * 1000 / r + (at - now) / 1000, 1e15)
    end
  end
  local tokens = string.format('%.17g', t)
  local value = string.format('%s %d %d', tokens, at, ev)
  if shared then
    value = value .. ' ' .. shared
    full_in_ms = math.max(full_in_ms, keep_ms)
  elseif full_in_ms == 0 then
    redis.call('DEL', key)
    return tokens
  end
  if full_in_ms < 0 then
    redis.call('SET', key, value)
  else
    redis.call('SET', key, value, 'PX', string.format('%d', math.ceil(full_in_ms) + 1))
  end
  return tokens
end
`;

function script(name: string, body: string): RedisScript {
  return Object.freeze({ name, lua: `${PRELUDE}\n${body.trim()}\n` });
}

/**
 * Reserves a call's cost on every limit at once (x/time/rate's `ReserveN` over all of them): each
 * bucket is charged, going negative when it must, and the call may act once the last covers it —
 * or, when any would need longer than the max wait (or forever), nothing is taken at all.
 *
 * KEYS: one bucket per limit, the request limit first when there is one.
 * ARGV: max wait in ms (-1: none), the shared rate's memory in ms; per limit: rate, burst, amount.
 * Reply: {1, wait µs, tokens left on the first limit, its rate; per limit: time to act (µs), rate},
 * or {0, wait µs}.
 */
export const RESERVE = script(
  'newsProcessorReserve',
  `
local now = now_us()
local max_wait_us = tonumber(ARGV[1]) * 1000
local keep = tonumber(ARGV[2])
local buckets = {}
local wait = 0
for i = 1, #KEYS do
  local burst = tonumber(ARGV[3 * i + 1])
  local t, at, ev, r, text, shared = load(KEYS[i], ARGV[3 * i], burst, now)
  t = t - tonumber(ARGV[3 * i + 2])
  local w = 0
  if t < 0 then
    if r > 0 then w = math.ceil((at - now) - t * 1000000 / r) else w = math.huge end
  end
  if w > wait then wait = w end
  buckets[i] = { t, at, ev, r, text, shared, burst, w }
end
if wait == math.huge or (max_wait_us >= 0 and wait > max_wait_us) then
  return { 0, us(wait) }
end
local reply = { 1, us(wait), '', buckets[1][5] }
for i = 1, #KEYS do
  local b = buckets[i]
  local act = now + b[8]
  local tokens = save(KEYS[i], b[1], b[2], math.max(b[3], act), b[4], b[6], b[7], now, keep)
  if i == 1 then reply[3] = tokens end
  reply[#reply + 1] = us(act)
  reply[#reply + 1] = b[5]
end
return reply
`,
);

/**
 * x/time/rate's `Reservation.Cancel`, per limit: if the time to act has not passed, gives the tokens
 * back less those that reservations made after it already count on, and moves the latest time to
 * act back when this one was it. A bucket that expired (full) or was lost gets nothing.
 *
 * KEYS: the reservation's buckets.
 * ARGV: the shared rate's memory in ms; per limit: configured rate, burst, amount, time to act (µs), rate at reservation.
 */
export const CANCEL = script(
  'newsProcessorCancel',
  `
local now = now_us()
local keep = tonumber(ARGV[1])
for i = 1, #KEYS do
  local o = 5 * (i - 1) + 1
  local burst, amount = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local act, rate = tonumber(ARGV[o + 4]), tonumber(ARGV[o + 5])
  if amount > 0 and rate > 0 and act >= now then
    local t, at, ev, r, text, shared, exists = load(KEYS[i], ARGV[o + 1], burst, now)
    local restore = amount - (ev - act) * rate / 1000000
    if exists and restore > 0 then
      if act == ev then
        local previous = math.ceil(act - amount * 1000000 / rate)
        if previous >= now then ev = previous end
      end
      save(KEYS[i], math.min(burst, t + restore), at, ev, r, shared, burst, now, keep)
    end
  end
end
return 1
`,
);

/**
 * Squares token estimates with the usage: a positive change refunds (capped at the burst), a
 * negative one debits, into debt if need be.
 *
 * KEYS: the grant's token buckets. ARGV: the shared rate's memory in ms; per limit: configured rate, burst, change.
 */
export const SETTLE = script(
  'newsProcessorSettle',
  `
local now = now_us()
local keep = tonumber(ARGV[1])
for i = 1, #KEYS do
  local o = 3 * (i - 1) + 1
  local burst, change = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local t, at, ev, r, text, shared, exists = load(KEYS[i], ARGV[o + 1], burst, now)
  if exists or change < 0 then
    save(KEYS[i], math.min(burst, t + change), at, ev, r, shared, burst, now, keep)
  end
end
return 1
`,
);

/**
 * The provider says only `remaining` is left: takes away the excess, never adds. Lowering to a
 * level already lower is nothing, so every process reporting the same header lowers once.
 *
 * KEYS[1]: the bucket. ARGV: the shared rate's memory in ms, configured rate, burst, remaining.
 */
export const LOWER = script(
  'newsProcessorLower',
  `
local now = now_us()
local burst, remaining = tonumber(ARGV[3]), tonumber(ARGV[4])
local t, at, ev, r, text, shared = load(KEYS[1], ARGV[2], burst, now)
if t > remaining then
  save(KEYS[1], remaining, at, ev, r, shared, burst, now, tonumber(ARGV[1]))
end
return 1
`,
);

/**
 * Compare-and-set on the shared request rate: applied only when the rate in force is the one the
 * caller last saw, so processes reacting to the same 429s make one cut, not one each. Tokens
 * accrued so far count at the old rate. The configured rate is stored as no rate at all.
 *
 * KEYS[1]: the request bucket. ARGV: the shared rate's memory in ms, configured rate, burst, the rate seen, the new rate.
 * Reply: {1, new rate} or {0, the rate in force}.
 */
export const SET_RATE = script(
  'newsProcessorSetRate',
  `
local now = now_us()
local configured, burst, seen, new = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local t, at, ev, r, text = load(KEYS[1], configured, burst, now)
if text ~= seen then
  return { 0, text }
end
local shared = nil
if new ~= configured then shared = new end
save(KEYS[1], t, at, ev, tonumber(new), shared, burst, now, tonumber(ARGV[1]))
return { 1, new }
`,
);

/**
 * `KeyedLimiter.take` for one key: takes `n` tokens if they are there, and says what is left, in
 * the same fields. A refusal writes nothing.
 *
 * KEYS[1]: the key's bucket. ARGV: rate, burst, n.
 * Reply: {allowed 1|0, whole tokens left, µs until full, µs until n are there}.
 */
export const TAKE = script(
  'newsProcessorTake',
  `
local now = now_us()
local rate, burst, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t, at = load(KEYS[1], ARGV[1], burst, now)
local allowed = n <= t
if allowed then
  t = t - n
  save(KEYS[1], t, at, at, rate, nil, burst, now, 0)
end
local reset = 0
if t < burst then
  if rate == 0 then reset = math.huge else reset = (burst - t) * 1000000 / rate end
end
local retry = 0
if not allowed then
  if n > burst then retry = math.huge
  elseif rate == 0 then retry = math.huge
  else retry = (n - t) * 1000000 / rate end
end
local verdict = 0
if allowed then verdict = 1 end
return { verdict, math.max(0, math.floor(t + 1e-9)), us(reset), us(retry) }
`,
);

/** Microseconds as the scripts write them, in ms: `inf` for a wait that never ends. */
export function readMicroseconds(text: unknown): number {
  if (text === 'inf') return Infinity;
  return Number(text) / 1000;
}
