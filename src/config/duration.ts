const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)\s*$/i;

/**
 * Milliseconds in a duration like `1ms`, `0.5s`, `2m`, `1h` (Go's units, without `us`/`ns`), or
 * `undefined` when the text is not one. A bare `0` is zero; other bare numbers are refused — a
 * unit-less `5` is a misunderstanding waiting to happen (5 ms or 5 s?).
 */
export function parseDuration(text: string): number | undefined {
  if (/^\s*0+(\.0*)?\s*$/.test(text)) return 0;
  const match = DURATION.exec(text);
  if (match === null) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2]!.toLowerCase()]!;
  return Number.isFinite(ms) ? ms : undefined;
}
