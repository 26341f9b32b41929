import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The conformance docs prove each claim by citing tests: `file › describe › test`, or a letter
 * standing for a file (`R: `describe › test``, defined in a legend as `file` (R) or `- R: `file``).
 * A name ending in `…` is cited by its beginning, one starting with `… ›` continues the file cited
 * before it in the same row or paragraph. A renamed or deleted test leaves a citation that proves
 * nothing, so every cited file must exist and every cited name must be in it.
 */
const ROOT = join(__dirname, '..', '..');

interface Citation {
  /** The first line of the row or paragraph. */
  line: number;
  file: string;
  names: string[];
}

/** Resolves a file a doc names: a path from the root, or a bare name in `baseDir`, else found by its name. */
type Resolve = (file: string) => string;

function resolverFor(baseDir: string): Resolve {
  let specs: string[] | undefined;
  return (file) => {
    if (file.includes('/') && existsSync(join(ROOT, file))) return file;
    if (existsSync(join(ROOT, baseDir, file))) return `${baseDir}/${file}`;
    specs ??= ['apps', 'libs', 'test'].flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.spec.ts') && !f.includes('node_modules'))
        .map((f) => `${dir}/${f.split('\\').join('/')}`),
    );
    const found = specs.filter((s) => s.endsWith(`/${file}`));
    return found.find((s) => s.startsWith(baseDir)) ?? found[0] ?? file;
  };
}

/** Rows, paragraphs and list items, each as one line of text, with the line it starts on. */
function blocksOf(markdown: string): { line: number; text: string }[] {
  const blocks: { line: number; text: string }[] = [];
  let current: { line: number; parts: string[] } | undefined;
  markdown.split('\n').forEach((text, i) => {
    const starts = text.trim() === '' || text.startsWith('|') || /^\s*- /.test(text) || text.startsWith('#');
    if (starts && current) {
      blocks.push({ line: current.line, text: current.parts.join(' ') });
      current = undefined;
    }
    if (text.trim() === '') return;
    if (current) current.parts.push(text.trim());
    else current = { line: i + 1, parts: [text.trim()] };
  });
  if (current) blocks.push({ line: current.line, text: current.parts.join(' ') });
  return blocks;
}

export function citationsOf(markdown: string, resolve: Resolve): Citation[] {
  const out: Citation[] = [];
  const legend = new Map<string, string>();
  for (const block of blocksOf(markdown)) {
    // A legend defines a letter from here on (a later section may define it again).
    for (const [, file, letter] of block.text.matchAll(/`([^`\s]+\.spec\.ts)` \(([A-Z][A-Z0-9]*)[,)]/g)) legend.set(letter, resolve(file));
    const listed = /^- ([A-Z][A-Z0-9]*): `([^`\s]+\.spec\.ts)`/.exec(block.text);
    if (listed) legend.set(listed[1], resolve(listed[2]));
    let file: string | undefined;
    for (const m of block.text.matchAll(/`([^`]+)`/g)) {
      const segment = m[1].replace(/\\$/, '');
      const parts = segment.split(/ › |^› /).filter((p, i) => i > 0 || p !== '');
      const letter = /(?:^|[\s(;,])([A-Z][A-Z0-9]{0,3}):? $/.exec(block.text.slice(0, m.index))?.[1];
      let names: string[];
      if (/\.spec\.ts$/.test(parts[0]) && !parts[0].includes('*')) {
        file = resolve(parts[0]);
        names = parts.slice(1);
      } else if (letter !== undefined && legend.has(letter) && (segment.includes(' › ') || segment.endsWith(' ›'))) {
        file = legend.get(letter);
        names = parts;
      } else if (/^(… )?› /.test(segment) && file !== undefined) {
        names = parts;
      } else continue;
      out.push({ line: block.line, file: file as string, names: names.map((n) => n.replace(/ ?›$/, '')).filter((n) => n !== '…') });
    }
  }
  return out;
}

/** The file's text with the quoting of its string literals undone, as jest sees the names. */
const sources = new Map<string, string | undefined>();
function sourceOf(file: string): string | undefined {
  if (!sources.has(file)) {
    const path = join(ROOT, file);
    sources.set(file, existsSync(path) ? readFileSync(path, 'utf8').replace(/\\(['"`])/g, '$1') : undefined);
  }
  return sources.get(file);
}

/** The names a file builds from templates (`${…}` in a template literal, `%s` in `it.each`), as literal fragments. */
function templatedNames(src: string): string[][] {
  const names: string[][] = [];
  for (const [, body] of src.matchAll(/`((?:[^`\\]|\\.)*\$\{(?:[^`\\]|\\.)*)`/g)) names.push(body.split(/\$\{[^}]*\}/));
  for (const [, body] of src.matchAll(/'([^'\n]*%[sdjp][^'\n]*)'/g)) names.push(body.split(/%[sdjp]/));
  return names;
}

/**
 * Whether `piece` can be part of a name made from `fragments` (literal text, a placeholder between
 * each two): at least half of its characters must be the template's own text, not what a placeholder took.
 */
function fitsTemplate(piece: string, fragments: string[]): boolean {
  // best[k][j]: most literal characters matched so far at offset j of fragment k (j = its length:
  // inside the placeholder after it); -1 when unreachable. A piece may start anywhere.
  let best = fragments.map((f) => Array.from({ length: f.length + 1 }, () => 0));
  for (const ch of piece) {
    const next = fragments.map((f) => Array.from({ length: f.length + 1 }, () => -1));
    fragments.forEach((f, k) => {
      for (let j = 0; j <= f.length; j++) {
        const here = best[k][j];
        if (here < 0) continue;
        if (j < f.length) {
          if (f[j] === ch) next[k][j + 1] = Math.max(next[k][j + 1], here + 1);
        } else if (k < fragments.length - 1) {
          next[k][j] = Math.max(next[k][j], here); // the placeholder takes it
          if (fragments[k + 1][0] === ch) next[k + 1][1] = Math.max(next[k + 1][1], here + 1);
          else if (fragments[k + 1] === '') next[k + 1][0] = Math.max(next[k + 1][0], here);
        }
      }
    });
    best = next;
  }
  return Math.max(...best.flat()) >= 0.5 * piece.length;
}

export function unprovenCitations(markdown: string, resolve: Resolve): string[] {
  const problems: string[] = [];
  for (const c of citationsOf(markdown, resolve)) {
    const src = sourceOf(c.file);
    if (src === undefined) {
      problems.push(`line ${c.line}: ${c.file} does not exist`);
      continue;
    }
    for (const name of c.names) {
      // `…` stands for what the citation leaves out, `<…>` for a value: each piece between must be in the file.
      const pieces = name
        .split(/…|<[^>]*>/)
        .map((p) => p.trim())
        .filter((p) => p.length >= 4);
      const found = (p: string) => src.includes(p) || templatedNames(src).some((t) => fitsTemplate(p, t));
      if (!pieces.every(found)) problems.push(`line ${c.line}: ${c.file} has no test named "${name}"`);
    }
  }
  return problems;
}

describe('the conformance docs cite tests that exist', () => {
  it.each([
    ['docs/conformance.md', 'libs/acp-protocol/src/lib'],
    ['docs/council-conformance.md', 'libs/council-protocol/src/lib'],
  ])('given the citations of %s, then every cited file exists and every cited test name is in it', (doc, baseDir) => {
    const markdown = readFileSync(join(ROOT, doc), 'utf8');
    expect(citationsOf(markdown, resolverFor(baseDir)).length).toBeGreaterThan(100);
    expect(unprovenCitations(markdown, resolverFor(baseDir))).toEqual([]);
  });

  it('given citations of a renamed test, a missing file, a continuation, a letter and a template, then each is checked against its file', () => {
    const doc = [
      'Files: `weighted-voting.spec.ts` (W).',
      '',
      '| x | `libs/acp-protocol/src/lib/weighted-voting.spec.ts › no such test`; `› 6.3 …` |',
      '| y | `no-such-file.spec.ts › anything` |',
      // A name built from a template literal: its placeholders take the values, not other words.
      '| z | `test/e2e/nats-restart.e2e.spec.ts › given intake, resolver, sweeper and audit as processes on a private server, when it stops for 4 s during 1200 proposals …`; `… › … on a public server, when it stops for 4 s …` |',
      '| w | W: `6.1 Weight = clamp(domain_authority) …`; W: `6.1 Weight is a guess ›` |',
    ].join('\n');
    const resolve = resolverFor('libs/acp-protocol/src/lib');
    const voting = 'libs/acp-protocol/src/lib/weighted-voting.spec.ts';
    const restart = 'test/e2e/nats-restart.e2e.spec.ts';
    expect(citationsOf(doc, resolve).map((c) => [c.line, c.file, c.names])).toEqual([
      [1, voting, []],
      [3, voting, ['no such test']],
      [3, voting, ['6.3 …']],
      [4, 'no-such-file.spec.ts', ['anything']],
      [
        5,
        restart,
        ['given intake, resolver, sweeper and audit as processes on a private server, when it stops for 4 s during 1200 proposals …'],
      ],
      [5, restart, ['… on a public server, when it stops for 4 s …']],
      [6, voting, ['6.1 Weight is a guess']],
    ]);
    expect(unprovenCitations(doc, resolve)).toEqual([
      `line 3: ${voting} has no test named "no such test"`,
      'line 4: no-such-file.spec.ts does not exist',
      `line 5: ${restart} has no test named "… on a public server, when it stops for 4 s …"`,
      `line 6: ${voting} has no test named "6.1 Weight is a guess"`,
    ]);
  });
});
