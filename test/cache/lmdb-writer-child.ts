// A writer killed mid-write: `node --import tsx lmdb-writer-child.ts <dir>` puts entries into the
// LMDB answer cache as fast as it can, each answer holding its own key and a long text made from
// it (so that a torn entry would show), and prints the count committed so far, one line per batch,
// until it is killed.
import { LmdbAnswerCache } from '../../src/cache/lmdb-answer-cache.ts';
import { entryFor } from './lmdb-entries.ts';

const cache = await LmdbAnswerCache.open(process.argv[2]!);
for (let batch = 0; ; batch++) {
  const puts: Promise<void>[] = [];
  for (let i = 0; i < 200; i++) {
    const n = batch * 200 + i;
    puts.push(cache.put(`k${n}`, entryFor(n)));
  }
  await Promise.all(puts);
  process.stdout.write(`${(batch + 1) * 200}\n`);
}
