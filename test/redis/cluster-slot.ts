/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag — what is between the first `{`
 * and the next `}`, when that is not empty — or of the whole key, modulo 16384.
 */
export function clusterSlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf('{');
  const close = open === -1 ? -1 : bytes.indexOf('}', open + 1);
  const hashed = close > open + 1 ? bytes.subarray(open + 1, close) : bytes;
  let crc = 0;
  for (const byte of hashed) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** The slots each master of a cluster serves, from `CLUSTER SLOTS`: `[first, last]` ranges by node port. */
export type SlotRanges = ReadonlyMap<number, readonly (readonly [number, number])[]>;

/** Parses `CLUSTER SLOTS` as ioredis returns it: `[[first, last, [host, port, id], …replicas], …]`. */
export function slotRanges(reply: unknown): SlotRanges {
  const ranges = new Map<number, [number, number][]>();
  for (const [first, last, master] of reply as [number, number, [string, number]][]) {
    const port = master[1];
    ranges.set(port, [...(ranges.get(port) ?? []), [first, last]]);
  }
  return ranges;
}

/**
 * A name `<stem>-<n>` for each node port, the smallest n whose `{name}` hashes to a slot that node
 * serves: quota keys that land on every node.
 */
export function namesOnEveryNode(ranges: SlotRanges, stem: string): Map<number, string> {
  const names = new Map<number, string>();
  for (const [port, served] of ranges) {
    for (let n = 0; ; n++) {
      const name = `${stem}-${n}`;
      const slot = clusterSlot(`{${name}}`);
      if (served.some(([first, last]) => slot >= first && slot <= last)) {
        names.set(port, name);
        break;
      }
    }
  }
  return names;
}
