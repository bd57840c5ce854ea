#!/usr/bin/env node
// The published entry point: registers tsx's loader so the TypeScript CLI runs as is.
import { register } from 'tsx/esm/api';

register();
await import('../cmd/news-processor.ts');
