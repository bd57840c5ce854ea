// The documents' relative links: each must name a file that exists and, when it points into a
// Markdown file, a heading that file has. Pure text in, problems out; scripts/readme.ts and a test
// run it over the project's documents.
import { posix } from 'node:path';

/** A link written in a document: its 1-based line and its target as written. */
export interface DocLink {
  readonly line: number;
  readonly target: string;
}

/** What the check may ask of the files: paths are relative to the project root, with `/`. */
export interface DocFiles {
  /** The file or folder exists. */
  exists(path: string): boolean;
  /** A Markdown file's text, to find its anchors; `undefined` when there is none. */
  read(path: string): string | undefined;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const EXPLICIT_ANCHOR = /<a\s+(?:id|name)="([^"]+)"/g;
/** `[text](target)` and `![alt](target)`, an optional title after the target. */
const INLINE_LINK = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g;
/** `[label]: target`, a link reference definition. */
const REFERENCE = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;
const SCHEME = /^[a-z][a-z\d+.-]*:/i;

/** Each line with whether it lies inside a fenced code block (the fences count as inside). */
function proseLines(lines: readonly string[]): { text: string; line: number }[] {
  const prose: { text: string; line: number }[] = [];
  let fence: string | undefined;
  lines.forEach((text, index) => {
    const open = FENCE.exec(text);
    if (fence === undefined && open !== null) fence = open[1]!;
    else if (fence !== undefined && open !== null && open[1]!.startsWith(fence[0]!) && open[1]!.length >= fence.length) fence = undefined;
    else if (fence === undefined) prose.push({ text, line: index + 1 });
  });
  return prose;
}

/** A line with its code spans blanked, so that a `[x](y)` quoted as code is not taken for a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)(.+?)\1/g, (span) => ' '.repeat(span.length));
}

/** GitHub's anchor for a heading's text: its rendered text in lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`/g, '')
    .replace(/\*\*|__|\*/g, '');
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown document has: one per heading (a repeated one gets `-1`, `-2`, …) and each `<a id>`. */
export function documentAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text: line } of proseLines(text.split('\n'))) {
    const heading = HEADING.exec(line);
    if (heading !== null) {
      const slug = headingSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const [, id] of line.matchAll(EXPLICIT_ANCHOR)) anchors.add(id!);
  }
  return anchors;
}

/** The links a document writes outside code: inline ones (their text may run over lines), images, and reference definitions. */
export function findLinks(text: string): DocLink[] {
  const lines = text.split('\n');
  const prose = new Set(proseLines(lines).map(({ line }) => line));
  // Code blanked where it stands, so that a match's offset still tells its line.
  const blanked = lines.map((line, index) => (prose.has(index + 1) ? withoutCodeSpans(line) : ''));
  const links: DocLink[] = [];
  blanked.forEach((line, index) => {
    const reference = REFERENCE.exec(line);
    if (reference !== null) links.push({ line: index + 1, target: reference[1]! });
  });
  const joined = blanked.join('\n');
  for (const match of joined.matchAll(INLINE_LINK)) {
    const line = joined.slice(0, match.index).split('\n').length;
    links.push({ line, target: match[1]! });
  }
  return links.sort((a, b) => a.line - b.line);
}

/**
 * Every relative link of each document that does not resolve, as `file:line: …` lines: a path that
 * names no file, or an `#anchor` that the Markdown file it points into does not have. Links with a
 * scheme (`https:`, `mailto:`) are not followed.
 */
export function brokenLinks(documents: readonly string[], files: DocFiles): string[] {
  const anchorsOf = new Map<string, Set<string> | undefined>();
  const anchors = (path: string) => {
    if (!anchorsOf.has(path)) {
      const text = files.read(path);
      anchorsOf.set(path, text === undefined ? undefined : documentAnchors(text));
    }
    return anchorsOf.get(path);
  };
  const problems: string[] = [];
  for (const document of documents) {
    const text = files.read(document);
    if (text === undefined) {
      problems.push(`${document}: cannot be read`);
      continue;
    }
    for (const { line, target } of findLinks(text)) {
      if (SCHEME.test(target)) continue;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const path =
        pathPart === ''
          ? document
          : posix
              .normalize(pathPart.startsWith('/') ? pathPart.slice(1) : posix.join(posix.dirname(document), pathPart))
              .replace(/(.)\/$/, '$1');
      if (path.startsWith('../') || path === '..') {
        problems.push(`${document}:${line}: ${target}: points outside the project`);
        continue;
      }
      if (!files.exists(path)) {
        problems.push(`${document}:${line}: ${target}: no such file (${path})`);
        continue;
      }
      if (anchor === undefined || anchor === '' || !path.endsWith('.md')) continue;
      if (!anchors(path)?.has(anchor)) problems.push(`${document}:${line}: ${target}: ${path} has no heading #${anchor}`);
    }
  }
  return problems;
}
