import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Issue 30: the docs users read name no internal decision numbers ("D7 lane") and point to no file
// outside the repository.

const root = process.cwd();
const docs = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('docs', () => {
  it.each(docs)('%s names no decision number and no file outside the repository', (file) => {
    const text = readFileSync(join(root, file), 'utf8');
    const numbers = text
      .split('\n')
      .map((l, i) => [i + 1, l] as const)
      .filter(([, l]) => /\bD\d{1,2}a?\b/.test(l.replace(/`[^`]*`/g, ''))); // code spans may hold EDI codes such as `D1`
    expect(numbers, file).toEqual([]);
    const outside = text
      .split('\n')
      .map((l, i) => [i + 1, l] as const)
      .filter(([, l]) => /\/work\/|\.\.\/shared|DECISIONS\.md|freight-api-spec/.test(l));
    expect(outside, file).toEqual([]);
    // Relative links stay inside the repository.
    const depth = file.split('/').length - 1;
    for (const m of text.matchAll(/\]\((\.\.\/[^)]*)\)/g))
      expect(m[1]!.split('/').filter((p) => p === '..').length, `${file}: ${m[1]}`).toBeLessThanOrEqual(depth);
  });
});

// Issue 46: comments and strings in src/ cite the project's own docs by file and heading
// (`(docs/api.md, "Bounds of a request")`), never a decision number of a file the repository does not
// hold.

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** The comments and the text of the string and template literals of a TypeScript file, each with its line. */
function commentsAndStrings(file: string): { line: number; text: string }[] {
  const text = readFileSync(join(root, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: { line: number; text: string }[] = [];
  const seen = new Set<number>();
  const add = (pos: number, end: number) => {
    if (seen.has(pos)) return;
    seen.add(pos);
    out.push({ line: sf.getLineAndCharacterOfPosition(pos).line + 1, text: text.slice(pos, end) });
  };
  const comments = (ranges: ts.CommentRange[] | undefined) => ranges?.forEach((r) => add(r.pos, r.end));
  const visit = (node: ts.Node) => {
    comments(ts.getLeadingCommentRanges(text, node.pos));
    comments(ts.getTrailingCommentRanges(text, node.end));
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) add(node.getStart(sf), node.end);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const srcFiles = sourceFiles('src');
/** Each doc's headings, backticks left out (a citation may keep or drop them). */
const headings = new Map(
  docs.map((file) => [file, new Set([...readFileSync(join(root, file), 'utf8').matchAll(/^#{1,4} (.+)$/gm)].map((m) => m[1]!.replace(/`/g, '')))]),
);

describe('src', () => {
  it('names no decision number in a comment or string (it cites docs/ by heading instead)', () => {
    const found = srcFiles.flatMap((file) =>
      commentsAndStrings(file).flatMap(({ line, text }) =>
        text.split('\n').flatMap((l, i) => (/\bD\d{1,2}[a-z]?\b|\bDECISIONS\b/.test(l) ? [`${file}:${line + i}: ${l.trim()}`] : [])),
      ),
    );
    expect(found).toEqual([]);
  });

  it('cites headings that exist: (docs/<file>.md, "<heading>")', () => {
    const broken = srcFiles.flatMap((file) =>
      commentsAndStrings(file).flatMap(({ line, text }) => {
        // A citation may run over two comment lines.
        const joined = text.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');
        return [...joined.matchAll(/((?:docs\/[\w-]+|README)\.md),? "([^"]+)"/g)]
          .filter(([, doc, heading]) => !headings.get(doc!)?.has(heading!.replace(/`/g, '')))
          .map(([cite]) => `${file}:${line}: ${cite}`);
      }),
    );
    expect(broken).toEqual([]);
  });
});
