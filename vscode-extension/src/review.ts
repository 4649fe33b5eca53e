/**
 * The agent's edits as pending changes (`loopd/review/propose`): each proposal
 * opens as a read-only document showing the file as it would be, the changed lines
 * highlighted, with "Accept hunk N" / "Reject hunk N" above each hunk and accept or
 * reject for the whole file on the first line and in the editor's title bar.
 * Rejecting a hunk puts its old lines back in the view; closing the tab rejects
 * what is left undecided. Once every hunk is decided the answer goes to the
 * server, which writes exactly the accepted hunks and says so
 * (`loopd/review/settled`); an open document it changed is then saved, so
 * accepting is saving.
 *
 * A timer (`loopd.review.autoAccept`, user settings only: a repository must not
 * turn it on) accepts what is still undecided, never for a path the server flagged
 * or the `loopd.review.alwaysAsk` globs match (the server canonicalised the path;
 * the server also refuses a timer's answer for its own flagged paths).
 */

import { realpathSync } from 'node:fs';
import * as vscode from 'vscode';
import { alwaysAsks, type Decision, type Placed, shown } from './hunks';
import type { HunkDecision, ReviewAnswer, ReviewProposal, ReviewSettled } from './protocol';

export const REVIEW_SCHEME = 'loopd-review';

export interface ReviewSettings {
  /** Seconds before undecided hunks are accepted; 0: never. */
  autoAcceptSeconds: number;
  alwaysAsk: readonly string[];
}

interface Pending {
  proposal: ReviewProposal;
  decisions: Decision[];
  uri: vscode.Uri;
  alwaysAsk: boolean;
  /** Seconds until the timer accepts what is undecided; 0: no timer. */
  autoSeconds: number;
  timer?: ReturnType<typeof setTimeout>;
  finish(answer: ReviewAnswer): void;
}

export class Reviews implements vscode.TextDocumentContentProvider, vscode.CodeLensProvider {
  private readonly pending = new Map<string, Pending>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  private readonly lenses = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  readonly onDidChangeCodeLenses = this.lenses.event;
  private readonly added = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
  });
  private readonly restored = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
  });

  constructor(private readonly settings: () => ReviewSettings) {}

  /** The server's request: resolves with the person's (or the timer's) answer. */
  propose(proposal: ReviewProposal, token?: vscode.CancellationToken): Promise<ReviewAnswer> {
    const settings = this.settings();
    const uri = vscode.Uri.from({ scheme: REVIEW_SCHEME, path: proposal.path, query: proposal.reviewId });
    const always = proposal.alwaysAsk || alwaysAsks(workspaceRelative(proposal.path), settings.alwaysAsk);
    return new Promise<ReviewAnswer>((resolve) => {
      const entry: Pending = {
        proposal,
        decisions: proposal.hunks.map(() => undefined),
        uri,
        alwaysAsk: always,
        autoSeconds: always ? 0 : settings.autoAcceptSeconds,
        finish: (answer) => {
          if (!this.pending.delete(proposal.reviewId)) return;
          if (entry.timer) clearTimeout(entry.timer);
          resolve(answer);
          this.lenses.fire();
          void closeTabs(uri);
        },
      };
      this.pending.set(proposal.reviewId, entry);
      token?.onCancellationRequested(() => entry.finish(answerOf(entry, 'reject', 'person')));
      if (entry.autoSeconds > 0) {
        entry.timer = setTimeout(() => entry.finish(answerOf(entry, 'accept', 'timer')), entry.autoSeconds * 1000);
      }
      void this.show(entry).catch(() => entry.finish(answerOf(entry, 'reject', 'person')));
    });
  }

  /** The server wrote what was accepted: an open document it changed is saved. */
  async settled(params: ReviewSettled): Promise<void> {
    if (!params.written) return;
    const path = vscode.Uri.parse(params.uri).fsPath;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === path);
    if (doc?.isDirty) await doc.save();
  }

  decideHunk(reviewId: unknown, index: unknown, decision: HunkDecision): void {
    const entry = typeof reviewId === 'string' ? this.pending.get(reviewId) : undefined;
    if (!entry || typeof index !== 'number' || !(index in entry.decisions)) return;
    entry.decisions[index] = decision;
    if (entry.decisions.every((d) => d !== undefined)) {
      entry.finish(answerOf(entry, 'reject', 'person'));
      return;
    }
    this.changed.fire(entry.uri);
    this.lenses.fire();
  }

  /** Every undecided hunk of one file: `target` is a review id or the review document's uri (the title bar passes it), else the active editor's. */
  decideFile(target: unknown, decision: HunkDecision): void {
    const entry = this.entryFor(target);
    if (entry) entry.finish(answerOf(entry, decision, 'person'));
  }

  decideAll(decision: HunkDecision): void {
    for (const entry of [...this.pending.values()]) entry.finish(answerOf(entry, decision, 'person'));
  }

  private entryFor(target: unknown): Pending | undefined {
    if (typeof target === 'string') return this.pending.get(target);
    const uri = target instanceof vscode.Uri ? target : vscode.window.activeTextEditor?.document.uri;
    return uri?.scheme === REVIEW_SCHEME ? this.pending.get(uri.query) : undefined;
  }

  // -- what the editor shows -------------------------------------------------------

  provideTextDocumentContent(uri: vscode.Uri): string {
    const entry = this.pending.get(uri.query);
    return entry ? view(entry).text : '';
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const entry = this.pending.get(doc.uri.query);
    if (!entry) return [];
    const { reviewId, relativePath, hunks } = entry.proposal;
    const top = new vscode.Range(0, 0, 0, 0);
    const open = entry.decisions.filter((d) => d === undefined).length;
    const auto = entry.alwaysAsk ? ' (always asks)' : entry.autoSeconds ? ` (auto-accepts after ${entry.autoSeconds}s)` : '';
    const unread = entry.proposal.oldUnread ? ', replacing a file loopd may not read' : '';
    const lenses = [
      lens(top, `loopd: ${relativePath}: ${open} of ${hunks.length} hunks to review${auto}${unread}`, ''),
      lens(top, 'Accept file', 'loopd.panel.acceptFile', reviewId),
      lens(top, 'Reject file', 'loopd.panel.rejectFile', reviewId),
    ];
    for (const placed of view(entry).placed) {
      const at = new vscode.Range(placed.line, 0, placed.line, 0);
      const n = placed.hunk.index + 1;
      if (placed.decision === undefined) {
        const what = placed.count === 0 ? `deletes ${placed.hunk.oldLines} lines: ` : '';
        lenses.push(lens(at, `${what}Accept hunk ${n}`, 'loopd.panel.acceptHunk', reviewId, placed.hunk.index));
        lenses.push(lens(at, `Reject hunk ${n}`, 'loopd.panel.rejectHunk', reviewId, placed.hunk.index));
      } else {
        lenses.push(lens(at, placed.decision === 'accept' ? `Hunk ${n} accepted` : `Hunk ${n} rejected`, ''));
      }
    }
    return lenses;
  }

  /** Colour the hunks of every review document on show (called when editors or texts change). */
  decorate(editors: readonly vscode.TextEditor[]): void {
    for (const editor of editors) {
      const entry = editor.document.uri.scheme === REVIEW_SCHEME ? this.pending.get(editor.document.uri.query) : undefined;
      if (!entry) continue;
      const placed = view(entry).placed.filter((p) => p.count > 0);
      const ranges = (keep: (p: Placed) => boolean) =>
        placed.filter(keep).map((p) => ({
          range: new vscode.Range(p.line, 0, p.line + p.count - 1, 0),
          hoverMessage: p.hunk.oldLines ? fenced(`replaces:`, p.hunk.oldText) : undefined,
        }));
      editor.setDecorations(this.added, ranges((p) => p.decision !== 'reject'));
      editor.setDecorations(this.restored, ranges((p) => p.decision === 'reject'));
    }
  }

  /** Closing a pending review's tab rejects what is undecided in it (the turn goes on, told so). */
  watchTabs(): vscode.Disposable {
    return vscode.window.tabGroups.onDidChangeTabs((e) => {
      for (const tab of e.closed) {
        const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
        const entry = uri?.scheme === REVIEW_SCHEME ? this.pending.get(uri.query) : undefined;
        if (entry) entry.finish(answerOf(entry, 'reject', 'person'));
      }
    });
  }

  private async show(entry: Pending): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(entry.uri);
    const editor = await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: true });
    this.decorate([editor]);
  }

  dispose(): void {
    this.decideAll('reject');
    this.added.dispose();
    this.restored.dispose();
  }
}

function view(entry: Pending): { text: string; placed: Placed[] } {
  return shown(entry.proposal.oldText, entry.proposal.hunks, entry.decisions);
}

/** The answer for `entry`: its decisions, with `rest` for the undecided hunks. */
function answerOf(entry: Pending, rest: HunkDecision, by: ReviewAnswer['by']): ReviewAnswer {
  return {
    hunks: entry.proposal.hunks.map((h) => ({ index: h.index, decision: entry.decisions[h.index] ?? rest })),
    by,
  };
}

function lens(range: vscode.Range, title: string, command: string, ...args: unknown[]): vscode.CodeLens {
  return new vscode.CodeLens(range, { title, command, arguments: args });
}

function fenced(title: string, text: string): vscode.MarkdownString {
  return new vscode.MarkdownString().appendText(title).appendCodeblock(text);
}

/** `path` relative to the workspace folder holding it (folders canonicalised, as the server's path is); undefined outside. */
function workspaceRelative(path: string): string | undefined {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    for (const root of new Set([folder.uri.fsPath, canonical(folder.uri.fsPath)])) {
      if (path.startsWith(`${root.replace(/\/+$/, '')}/`)) return path.slice(root.replace(/\/+$/, '').length + 1);
    }
  }
  return undefined;
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

async function closeTabs(uri: vscode.Uri): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
  const ours = tabs.filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
  if (ours.length) await vscode.window.tabGroups.close(ours);
}
