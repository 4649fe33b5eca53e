/**
 * A line diff for the panel's edit cards: the longest common subsequence of lines,
 * shown with a few lines of context around each change. Big inputs (past
 * MAX_CELLS of the LCS table) fall back to "all removed, all added" rather than
 * stalling the panel; VS Code's own diff editor ("Open diff") has the full view.
 */

export type DiffLine = { op: ' ' | '-' | '+'; text: string } | { op: '…'; text: string };

const MAX_CELLS = 2_000_000;

export function diffLines(oldText: string | null, newText: string, context = 3): DiffLine[] {
  const a = splitLines(oldText ?? '');
  const b = splitLines(newText);
  const ops = a.length * b.length > MAX_CELLS ? wholesale(a, b) : lcs(a, b);
  return withContext(ops, context);
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function wholesale(a: string[], b: string[]): DiffLine[] {
  return [...a.map((text) => ({ op: '-' as const, text })), ...b.map((text) => ({ op: '+' as const, text }))];
}

function lcs(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i] });
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) {
      out.push({ op: '-', text: a[i++] });
    } else {
      out.push({ op: '+', text: b[j++] });
    }
  }
  while (i < n) out.push({ op: '-', text: a[i++] });
  while (j < m) out.push({ op: '+', text: b[j++] });
  return out;
}

function withContext(lines: DiffLine[], context: number): DiffLine[] {
  const near = lines.map(() => false);
  lines.forEach((line, index) => {
    if (line.op === ' ') return;
    for (let k = Math.max(0, index - context); k <= Math.min(lines.length - 1, index + context); k++) {
      near[k] = true;
    }
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  lines.forEach((line, index) => {
    if (near[index]) {
      if (skipped) out.push({ op: '…', text: `${skipped} unchanged line${skipped > 1 ? 's' : ''}` });
      skipped = 0;
      out.push(line);
    } else {
      skipped++;
    }
  });
  if (skipped && out.length) out.push({ op: '…', text: `${skipped} unchanged line${skipped > 1 ? 's' : ''}` });
  return out;
}
