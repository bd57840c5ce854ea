/**
 * Heap bytes held by what `build` leaves reachable — the JS heap and `ArrayBuffer` backing stores
 * (typed arrays live outside the heap) — measured as the delta across two full collections. Needs
 * `node --expose-gc`; returns NaN without it.
 */
export function retainedHeapBytes(build: () => void): number {
  const collect = globalThis.gc;
  if (collect === undefined) return Number.NaN;
  collect();
  collect();
  const beforeBytes = usedBytes();
  build();
  collect();
  collect();
  return usedBytes() - beforeBytes;
}

function usedBytes(): number {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

export const canMeasureHeap = (): boolean => globalThis.gc !== undefined;
