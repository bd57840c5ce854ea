/**
 * Heap bytes held by what `build` leaves reachable, measured as the `heapUsed` delta across two full
 * collections. Needs `node --expose-gc`; returns NaN without it.
 */
export function retainedHeapBytes(build: () => void): number {
  const collect = globalThis.gc;
  if (collect === undefined) return Number.NaN;
  collect();
  collect();
  const beforeBytes = process.memoryUsage().heapUsed;
  build();
  collect();
  collect();
  return process.memoryUsage().heapUsed - beforeBytes;
}

export const canMeasureHeap = (): boolean => globalThis.gc !== undefined;
