/**
 * Ms until `calls` more calls would all be granted across members that each grant their own share
 * (`backlogMs(k)`: ms until member's next `k` calls would be granted, non-decreasing in `k`): the
 * least instant by which their grants add up to `calls` — so the pool's rate is the sum of its
 * members'. 0 for no calls; `Infinity` with no member, or none that ever grants.
 */
export function combinedBacklogMs(members: readonly ((calls: number) => number)[], calls: number): number {
  if (calls <= 0) return 0;
  if (members.length === 0) return Infinity;
  // One member taking them all is an upper bound; the least instant is found by bisection.
  let highMs = Math.min(...members.map((backlogMs) => backlogMs(calls)));
  if (highMs === 0 || members.length === 1) return highMs;
  if (highMs === Infinity) {
    // A member that never grants leaves the others: find any instant at which they cover the calls.
    highMs = 1;
    while (grantedBy(members, highMs, calls) < calls) {
      highMs *= 2;
      if (highMs > 1e15) return Infinity;
    }
  }
  let lowMs = 0;
  if (grantedBy(members, lowMs, calls) >= calls) return 0;
  // 1 µs, or one part in a million of the span: far below a timer's resolution.
  while (highMs - lowMs > Math.max(1e-3, highMs * 1e-6)) {
    const midMs = (lowMs + highMs) / 2;
    if (grantedBy(members, midMs, calls) >= calls) highMs = midMs;
    else lowMs = midMs;
  }
  return highMs;
}

/** How many calls (up to `cap`) the members grant in all by `atMs` from now. */
function grantedBy(members: readonly ((calls: number) => number)[], atMs: number, cap: number): number {
  let total = 0;
  for (const backlogMs of members) {
    total += grantsBy(backlogMs, atMs, cap - total);
    if (total >= cap) return total;
  }
  return total;
}

/** The most calls (up to `cap`) one member grants by `atMs`. */
function grantsBy(backlogMs: (calls: number) => number, atMs: number, cap: number): number {
  if (cap <= 0 || backlogMs(1) > atMs) return 0;
  if (backlogMs(cap) <= atMs) return cap;
  let low = 1;
  let high = cap;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (backlogMs(mid) <= atMs) low = mid;
    else high = mid;
  }
  return low;
}
