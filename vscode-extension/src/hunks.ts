/**
 * The pure part of reviewing an edit: which text a set of hunk decisions leaves,
 * where each hunk sits in that text, and whether a path always asks. No `vscode`
 * import: the unit tests drive it. The server is the authority (it writes exactly
 * the accepted hunks and refuses a timer's answer for an alwaysAsk path); this is
 * what the editor shows and when it lets a timer answer at all.
 */

import type { HunkDecision, ReviewHunk } from './protocol';

export type Decision = HunkDecision | undefined;

/** Lines with their endings, as the server splits them (Python's `splitlines(keepends=True)` on \n). */
export function lines(text: string | null): string[] {
  if (!text) return [];
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Where a hunk shows in the text `shown` builds: its first line and how many lines it has there. */
export interface Placed {
  hunk: ReviewHunk;
  line: number;
  count: number;
  decision: Decision;
}

/**
 * The text the person is shown: the old text with every hunk not rejected applied
 * (undecided ones included, so the pending change is visible), and where each hunk
 * landed in it. A rejected hunk shows its old lines.
 */
export function shown(oldText: string | null, hunks: ReviewHunk[], decisions: Decision[]): { text: string; placed: Placed[] } {
  const before = lines(oldText);
  const out: string[] = [];
  const placed: Placed[] = [];
  let at = 0;
  for (const hunk of hunks) {
    out.push(...before.slice(at, hunk.oldStart));
    const decision = decisions[hunk.index];
    const taken = decision === 'reject' ? lines(hunk.oldText) : lines(hunk.newText);
    placed.push({ hunk, line: out.length, count: taken.length, decision });
    out.push(...taken);
    at = hunk.oldStart + hunk.oldLines;
  }
  out.push(...before.slice(at));
  return { text: out.join(''), placed };
}

/** A glob as VS Code's settings write them: `*`, `?`, `**`; no `/` matches a name at any depth. Case folded. */
export function globMatches(glob: string, relativePath: string): boolean {
  const pattern = glob.trim().replace(/^\/+/, '');
  if (!pattern) return false;
  const subject = pattern.includes('/') ? relativePath : relativePath.slice(relativePath.lastIndexOf('/') + 1);
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      const folders = pattern[i + 2] === '/';
      source += folders ? '(?:.*/)?' : '.*';
      i += folders ? 2 : 1;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'i').test(subject);
}

/** Whether a path (relative to the workspace, `undefined` when outside it) may only be accepted by a person. */
export function alwaysAsks(relativePath: string | undefined, globs: readonly string[]): boolean {
  if (relativePath === undefined || relativePath === '..' || relativePath.startsWith('../')) return true;
  return globs.some((g) => globMatches(g, relativePath));
}
