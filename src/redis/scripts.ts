import { createHash } from 'node:crypto';

/**
 * The Lua scripts that keep token buckets in Redis, with the semantics of `TokenBucket`
 * (x/time/rate's `Limiter`) on Redis `TIME` — the one clock every process agrees on. A quota's
 * bucket is one string of five doubles, packed (`struct.pack('<ddddd')`, 40 bytes): its tokens,
 * the instant they count at, the latest time to act of any reservation, the shared rate when
 * `setRate` has set one (else -1), and the instant its key expires. A missing key is a full
 * bucket: the key is set to expire once the bucket is full again (up to a second later), so an
 * idle quota costs nothing; the expiry is set only when it must move (`SET … KEEPTTL` otherwise),
 * which saves Redis a tenth of a reservation's time. The buckets of `KeyedLimiter`'s store are
 * three doubles (24 bytes), set to expire exactly when full. Earlier versions' buckets (three or
 * four doubles, or text) are still read, and written in the new form.
 *
 * Instants are whole microseconds of Redis time (times to act rounded up: never early); a double
 * holds them, and the tokens, exactly. Packed, a bucket is read and written in a fraction of what
 * text costs (`string.format('%.17g')` and `string.match` were most of a reservation's time in
 * Redis); a bucket in the text of earlier versions (`t at ev [r]`) is still read, and written
 * packed. Rates travel as the caller wrote them, and compare as numbers. Replies hold integers
 * wherever the value is whole (waits and instants in µs, `-1` for a wait that never ends; the
 * tokens left in millionths): an integer costs Redis and the client next to nothing to write and
 * read.
 */

/** A script, the name it is known by in logs, and its SHA1 (what `EVALSHA` sends). */
export interface RedisScript {
  /** The name logs know the script by. */
  readonly name: string;
  /** The script's source. */
  readonly lua: string;
  /** The script's SHA1, what `EVALSHA` sends. */
  readonly sha: string;
}

/**
 * A shared rate lowered by the adaptive rate is kept this long after the quota was last used, in
 * ms, even when the bucket is full again: a short pause must not bring back the rate that drew the
 * 429s. After it, the configured rate applies, as it does for a process that starts afresh.
 */
export const RATE_MEMORY_MS = 60_000;

/**
 * The longest a key is set to live, in ms (317 years): a bucket that refills slower lives this
 * long. Whole numbers below 1e14 are what Lua writes exactly as an argument, without a format.
 */
const MAX_TTL_MS = 1e13;

/**
 * How much further than needed a quota's key is set to expire when its expiry must move, in ms:
 * at most one reservation in this long (of a bucket in use) sets the TTL; the others keep it.
 */
const EXPIRY_SLACK_MS = 1000;

const PRELUDE = `
local function now_us()
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2]
end

-- A bucket at now: its tokens (refilled, capped at burst; a clock reading earlier than the last
-- adds nothing), the instant they count at, the latest time to act, the rate in force (per second),
-- the shared rate when one is set (else nil), whether the key exists, and the instant its key is set
-- to expire (0 when its format does not say; math.huge: never).
local function load(key, rate, burst, now)
  local s = redis.call('GET', key)
  if not s then
    return burst, now, now, rate, nil, false, 0
  end
  local t, at, ev, shared
  local expires = 0
  local n = #s
  if n == 40 then
    t, at, ev, shared, expires = struct.unpack('<ddddd', s)
    if shared < 0 then shared = nil end
  elseif n == 24 then
    t, at, ev = struct.unpack('<ddd', s)
  elseif n == 32 then
    t, at, ev, shared = struct.unpack('<dddd', s)
  else
    local ts, ats, evs, rs = string.match(s, '^(%S+) (%S+) (%S+) ?(%S*)$')
    t, at, ev = ts + 0, ats + 0, evs + 0
    if rs ~= '' then shared = rs + 0 end
  end
  local r = shared or rate
  if now > at then
    t = math.min(burst, t + (now - at) * r / 1000000)
    at = now
  end
  return t, at, ev, r, shared, true, expires
end

-- Stores a bucket to live until it is full again (a full one is deleted), or ${RATE_MEMORY_MS} ms
-- at least while it holds a shared rate; at rate 0 it never refills, so it stays. With \`expires\`
-- (the instant load read), the key's expiry is moved only when it falls short, and then ${EXPIRY_SLACK_MS} ms
-- further than needed: a SET that keeps the key's TTL costs Redis less than one that sets it, and a
-- busy bucket is full again a little later with every take. Lingering past full is no harm: a
-- bucket reads as full once refilled. Without \`expires\`, exactly until full, in the packed form
-- of three doubles (KeyedLimiter's store: one key per client, so memory counts).
local function save(key, t, at, ev, r, shared, burst, now, expires)
  local full_in_ms = 0
  if t < burst then
    if r <= 0 then
      full_in_ms = -1
    else
      full_in_ms = math.min((burst - t) * 1000 / r + (at - now) / 1000, ${MAX_TTL_MS})
    end
  end
  if shared then full_in_ms = math.max(full_in_ms, ${RATE_MEMORY_MS}) end
  if full_in_ms == 0 then
    redis.call('DEL', key)
  elseif expires == nil then
    if full_in_ms < 0 then
      redis.call('SET', key, struct.pack('<ddd', t, at, ev))
    else
      redis.call('SET', key, struct.pack('<ddd', t, at, ev), 'PX', math.ceil(full_in_ms) + 1)
    end
  else
    local until_us = math.huge
    if full_in_ms >= 0 then until_us = now + full_in_ms * 1000 end
    if expires >= until_us and (expires < math.huge or until_us == math.huge) then
      redis.call('SET', key, struct.pack('<ddddd', t, at, ev, shared or -1, expires), 'KEEPTTL')
    elseif full_in_ms < 0 then
      redis.call('SET', key, struct.pack('<ddddd', t, at, ev, shared or -1, math.huge))
    else
      -- A ms more, and said to expire a ms before it does: Redis counts the TTL from its own
      -- reading of the time in whole ms, up to a ms behind TIME.
      local ttl_ms = math.ceil(full_in_ms) + 1 + ${EXPIRY_SLACK_MS}
      redis.call('SET', key, struct.pack('<ddddd', t, at, ev, shared or -1, now + (ttl_ms - 1) * 1000), 'PX', ttl_ms)
    end
  end
end
`;

function script(name: string, body: string, prelude = PRELUDE): RedisScript {
  return defineScript(name, `${prelude}\n${body.trim()}\n`);
}

/** A script as `RedisConnection.run` takes it: its source and the SHA1 that `EVALSHA` sends. */
export function defineScript(name: string, lua: string): RedisScript {
  return Object.freeze({ name, lua, sha: createHash('sha1').update(lua).digest('hex') });
}

/**
 * Reserves a call's cost on every limit at once (x/time/rate's `ReserveN` over all of them): each
 * bucket is charged, going negative when it must, and the call may act once the last covers it —
 * or, when any would need longer than the max wait (or forever), nothing is taken at all.
 *
 * KEYS: one bucket per limit, the request limit first when there is one.
 * ARGV: max wait in ms (-1: none); per limit: rate, burst, amount.
 * Reply: {wait µs, millionths of a token left on the first limit (clamped to ±1e12 tokens), the
 * first limit's shared rate or nil when the configured one is in force; when the wait is not 0, per
 * limit: its time to act (µs), what a cancel needs}, or {-1, the wait µs (-1: never)}.
 */
export const RESERVE = script(
  'reserve',
  `
local now = now_us()
local max_wait_us = ARGV[1] * 1000
local buckets = {}
local wait = 0
for i = 1, #KEYS do
  local o = 3 * i - 1
  local burst = ARGV[o + 1] + 0
  local t, at, ev, r, shared, _, expires = load(KEYS[i], ARGV[o] + 0, burst, now)
  t = t - ARGV[o + 2]
  local w = 0
  if t < 0 then
    if r > 0 then w = math.ceil((at - now) - t * 1000000 / r) else w = math.huge end
  end
  if w > wait then wait = w end
  buckets[i] = { t, at, ev, r, shared, burst, w, expires }
end
if wait == math.huge then return { -1, -1 } end
if max_wait_us >= 0 and wait > max_wait_us then return { -1, wait } end
local first = buckets[1]
local rate = false
if first[5] then rate = string.format('%.17g', first[5]) end
local reply = { wait, math.floor(math.max(-1e12, math.min(1e12, first[1])) * 1000000), rate }
for i = 1, #KEYS do
  local b = buckets[i]
  local act = now + b[7]
  save(KEYS[i], b[1], b[2], math.max(b[3], act), b[4], b[5], b[6], now, b[8])
  if wait > 0 then reply[i + 3] = act end
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
 * ARGV: per limit: configured rate, burst, amount, time to act (µs), rate at reservation.
 */
export const CANCEL = script(
  'cancel',
  `
local now = now_us()
for i = 1, #KEYS do
  local o = 5 * (i - 1)
  local burst, amount = ARGV[o + 2] + 0, ARGV[o + 3] + 0
  local act, rate = ARGV[o + 4] + 0, ARGV[o + 5] + 0
  if amount > 0 and rate > 0 and act >= now then
    local t, at, ev, r, shared, exists, expires = load(KEYS[i], ARGV[o + 1] + 0, burst, now)
    local restore = amount - (ev - act) * rate / 1000000
    if exists and restore > 0 then
      if act == ev then
        local previous = math.ceil(act - amount * 1000000 / rate)
        if previous >= now then ev = previous end
      end
      save(KEYS[i], math.min(burst, t + restore), at, ev, r, shared, burst, now, expires)
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
 * KEYS: the grant's token buckets. ARGV: per limit: configured rate, burst, change.
 */
export const SETTLE = script(
  'settle',
  `
local now = now_us()
for i = 1, #KEYS do
  local o = 3 * (i - 1)
  local burst, change = ARGV[o + 2] + 0, ARGV[o + 3] + 0
  local t, at, ev, r, shared, exists, expires = load(KEYS[i], ARGV[o + 1] + 0, burst, now)
  if exists or change < 0 then
    save(KEYS[i], math.min(burst, t + change), at, ev, r, shared, burst, now, expires)
  end
end
return 1
`,
);

/**
 * The provider says only `remaining` is left: takes away the excess, never adds. Lowering to a
 * level already lower is nothing, so every process reporting the same header lowers once.
 *
 * KEYS[1]: the bucket. ARGV: configured rate, burst, remaining.
 */
export const LOWER = script(
  'lower',
  `
local now = now_us()
local burst, remaining = ARGV[2] + 0, ARGV[3] + 0
local t, at, ev, r, shared, _, expires = load(KEYS[1], ARGV[1] + 0, burst, now)
if t > remaining then
  save(KEYS[1], remaining, at, ev, r, shared, burst, now, expires)
end
return 1
`,
);

/**
 * Compare-and-set on the shared request rate: applied only when the rate in force is the one the
 * caller last saw (as numbers: a rate the script wrote as text reads back the same), so processes reacting to the same 429s make one cut, not one each. Tokens
 * accrued so far count at the old rate. The configured rate is stored as no rate at all.
 *
 * KEYS[1]: the request bucket. ARGV: configured rate, burst, the rate seen, the new rate.
 * Reply: {1, new rate} or {0, the rate in force}.
 */
export const SET_RATE = script(
  'setRate',
  `
local now = now_us()
local configured, burst, seen, new = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
local t, at, ev, r, shared, _, expires = load(KEYS[1], configured, burst, now)
local in_force = shared or configured
if in_force ~= seen then
  return { 0, string.format('%.17g', in_force) }
end
local kept = nil
if new ~= configured then kept = new end
save(KEYS[1], t, at, ev, new, kept, burst, now, expires)
return { 1, ARGV[4] }
`,
);

/**
 * `KeyedLimiter.take` for one key: takes `n` tokens if they are there, and says what is left, in
 * the same fields. A refusal writes nothing.
 *
 * KEYS[1]: the key's bucket. ARGV: rate, burst, n.
 * Reply: {allowed 1|0, whole tokens left, µs until full, µs until n are there} (-1: never).
 */
export const TAKE = script(
  'take',
  `
local now = now_us()
local rate, burst, n = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0
local t, at = load(KEYS[1], rate, burst, now)
local allowed = n <= t
if allowed then
  t = t - n
  save(KEYS[1], t, at, at, rate, nil, burst, now)
end
local reset = 0
if t < burst then
  if rate == 0 then reset = -1 else reset = math.ceil((burst - t) * 1000000 / rate) end
end
local retry = 0
if not allowed then
  if n > burst or rate == 0 then retry = -1
  else retry = math.ceil((n - t) * 1000000 / rate) end
end
local verdict = 0
if allowed then verdict = 1 end
return { verdict, math.max(0, math.floor(t + 1e-9)), reset, retry }
`,
);

/**
 * Puts n tokens taken before back in a key's bucket (a per-key token bucket), never past burst:
 * a take at a worst case settled on the actual use.
 *
 * KEYS[1]: the key's bucket. ARGV: rate, burst, n. Reply: whole tokens now.
 */
export const GIVE = script(
  'give',
  `
local now = now_us()
local rate, burst, n = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0
local t, at, _, _, _, exists = load(KEYS[1], rate, burst, now)
if not exists then return math.floor(burst) end
t = math.min(burst, t + n)
save(KEYS[1], t, at, at, rate, nil, burst, now)
return math.floor(t + 1e-9)
`,
);

/**
 * Whether this user may do on the keys what a caller's scripts do, without doing it:
 * `redis.acl_check_cmd` (Redis 7) asks of every command the scripts run, with each key, and of
 * `EVALSHA` and `EVAL` themselves (Redis checked `EVAL` of this script already, or `EVALSHA`).
 * Before Redis 7 there is no asking without doing, so only what changes nothing runs: `TIME`, `GET`.
 *
 * KEYS: the keys the scripts use. ARGV: the commands they run (space-separated, among those of
 * `shapes`), then their SHA1s. Reply: nil when all is allowed, else the first command line refused.
 */
export const CHECK = script(
  'check',
  `
local shapes = { time = false, get = {}, set = { '0', 'PX', '1' }, del = {}, incrby = { '1' }, decrby = { '1' } }
if not redis.acl_check_cmd then
  for command in string.gmatch(ARGV[1], '%S+') do
    if command == 'time' then redis.call('TIME') end
    if command == 'get' then for i = 1, #KEYS do redis.call('GET', KEYS[i]) end end
  end
  return false
end
local function refused(...)
  if redis.acl_check_cmd(...) then return nil end
  return table.concat({ ... }, ' ')
end
local found = nil
for command in string.gmatch(ARGV[1], '%S+') do
  local shape = shapes[command]
  if shape == false then
    found = found or refused(command)
  else
    for i = 1, #KEYS do found = found or refused(command, KEYS[i], unpack(shape)) end
  end
end
for i = 2, #ARGV do
  found = found or refused('evalsha', ARGV[i], #KEYS, unpack(KEYS)) or refused('eval', 'return 1', #KEYS, unpack(KEYS))
end
return found or false
`,
  '',
);

/** Does nothing, on the keys given: whether the node that serves them answers, for a user that may run scripts there and nothing else. */
export const PROBE = script('probe', 'return 1', '');

/** Microseconds as the scripts reply them, in ms: `-1` is a wait that never ends. */
export function readMicroseconds(us: unknown): number {
  return us === -1 ? Infinity : (us as number) / 1000;
}
