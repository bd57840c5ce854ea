// `news-processor/sinks`: where a run's results go, and what a later run takes up from them — the
// `ResultStore` seam (write, take up for a resume, compact, the spend carried across resumes, a batch
// run's state beside the results), its JSONL file (what `--output` writes) and in-memory
// implementations, the JSONL writer and reader under them, and a resumed run's source.
export type { ResultStore, RunStateSlot, KeptResults, KeepSucceededOptions, ResultLine } from './result-store.ts';
export { JsonlResultStore } from './jsonl-result-store.ts';
export { MemoryResultStore } from './memory-result-store.ts';
export { JsonlWriter, OutputError } from './jsonl-writer.ts';
export type { JsonlWriterOptions } from './jsonl-writer.ts';
export { keepSucceeded, ResultsFileError } from './results-file.ts';
// A resumed run's articles: the successes skipped, the rest with the outputs they keep.
export { resumedSource, withKeptOutputs, countRedone } from './resumed-source.ts';
export type { ResumedSource } from './resumed-source.ts';
