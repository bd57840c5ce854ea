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
