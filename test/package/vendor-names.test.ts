import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The folder that owns every vendor: the only code that may name one. */
const VENDORS = join(ROOT, 'src', 'vendors');
const VENDOR_NAME = /openai|anthropic|azure|gemini/i;

/**
 * `source` with its comments blanked out, strings, template literals and regular expressions kept:
 * a comment may use a vendor as an example, code may not name one.
 */
function withoutComments(source: string): string {
  let out = '';
  /** The braces open inside each template literal's `${…}`, innermost last. */
  const templates: number[] = [];
  let i = 0;
  /** Whether a `/` here starts a regular expression (after an operator, a bracket or a keyword) rather than dividing. */
  const regexMayStart = (): boolean => {
    const before = out.trimEnd();
    if (before === '') return true;
    if (/[(,=:[!&|?{};+\-*%<>~^]$/.test(before)) return true;
    return /\b(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/.test(before);
  };
  while (i < source.length) {
    const char = source[i]!;
    const next = source[i + 1];
    if (char === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    if (char === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const comment = source.slice(i, end < 0 ? source.length : end + 2);
      // Line breaks kept, so that line numbers hold.
      out += comment.replace(/[^\n]/g, ' ');
      i += comment.length;
      continue;
    }
    if (char === "'" || char === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== char && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (char === '`' || (char === '}' && templates.at(-1) === 0)) {
      if (char === '}') templates.pop();
      let j = i + 1;
      while (j < source.length && source[j] !== '`' && !(source[j] === '$' && source[j + 1] === '{')) j += source[j] === '\\' ? 2 : 1;
      if (source[j] === '$') {
        templates.push(0);
        j++;
      }
      out += source.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (char === '/' && regexMayStart()) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== '\n' && (inClass || source[j] !== '/')) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        j++;
      }
      out += source.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (templates.length > 0 && char === '{') templates[templates.length - 1]!++;
    if (templates.length > 0 && char === '}') templates[templates.length - 1]!--;
    out += char;
    i++;
  }
  return out;
}

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts')) files.push(path);
  }
  return files;
}

describe('vendor names', () => {
  it('no code outside src/vendors/ names a vendor: a vendor is its folder and a line of the registry', async () => {
    const found: string[] = [];
    for (const file of [...(await sourceFiles(join(ROOT, 'src'))), ...(await sourceFiles(join(ROOT, 'cmd')))]) {
      if (file.startsWith(`${VENDORS}/`)) continue;
      const lines = withoutComments(await readFile(file, 'utf8')).split('\n');
      lines.forEach((line, index) => {
        if (VENDOR_NAME.test(line)) found.push(`${relative(ROOT, file)}:${index + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('reads code, not comments: names in comments pass, in strings, identifiers and regular expressions they do not', () => {
    // `$` is `S` in the sample (a template's `${` in a plain string is a lint), swapped back before reading.
    const sample = [
      '// OpenAI, as an example',
      '/* Anthropic',
      '   over lines */ const a = 1;',
      "const b = 'azure'; const c = `xS{'y'}z`; // gemini",
      'const d = /\\/openai/; const e = a / 2; // anthropic',
      'const f = `S{`S{a}`}` + "//" + OpenAiThing;',
    ].map((line) => line.replaceAll('S{', '$' + '{'));
    const lines = withoutComments(sample.join('\n')).split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe('');
    expect(lines[2]).toMatch(/^\s+const a = 1;$/);
    expect(lines[3]).toBe(sample[3]!.slice(0, sample[3]!.indexOf('//')));
    expect(lines[4]).toBe('const d = /\\/openai/; const e = a / 2; ');
    expect(lines[5]).toBe(sample[5]);
    expect(lines.filter((line) => VENDOR_NAME.test(line))).toHaveLength(3);
  });
});
