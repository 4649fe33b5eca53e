/**
 * What the `@` menu's context entries attach, gathered from VS Code: a folder of the
 * workspace (linked: the server lists it through its own gates), the Problems of a
 * file, the active terminal's last output and the git changes (embedded: only the
 * editor knows them). Each file's Problems and changes name that file's uri, so the
 * server refuses them for a path its policy refuses (a secret's diff is not sent).
 */

import * as vscode from 'vscode';
import { lastLines, problemsText } from './attachments';
import type { Attachment, ContextKind } from './webview/state';

export const MAX_CHANGED_FILES = 30;

/** The attachments for `kind`; none when there is nothing to attach (the person is told). */
export async function gatherContext(kind: ContextKind): Promise<Attachment[]> {
  switch (kind) {
    case 'folder':
      return pickFolder();
    case 'problems':
      return problems();
    case 'terminal':
      return terminalOutput();
    case 'changes':
      return gitChanges();
  }
}

async function pickFolder(): Promise<Attachment[]> {
  const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git,.venv}/**', 5000);
  const folders = new Map<string, vscode.Uri>();
  for (const root of vscode.workspace.workspaceFolders ?? []) folders.set('.', root.uri);
  for (const file of files) {
    const parent = vscode.Uri.joinPath(file, '..');
    const label = vscode.workspace.asRelativePath(parent, false);
    if (label && label !== parent.fsPath) folders.set(label, parent);
  }
  const picked = await vscode.window.showQuickPick(
    [...folders].sort(([a], [b]) => a.localeCompare(b)).map(([label, uri]) => ({ label, uri })),
    { placeHolder: 'Mention a folder' },
  );
  return picked ? [{ kind: 'folder', uri: picked.uri.toString(), name: `${picked.label}/` }] : [];
}

async function problems(): Promise<Attachment[]> {
  const active = vscode.window.activeTextEditor?.document.uri;
  let uri = active && vscode.languages.getDiagnostics(active).length ? active : undefined;
  if (!uri) {
    const withProblems = vscode.languages.getDiagnostics().filter(([, d]) => d.length);
    const picked = await vscode.window.showQuickPick(
      withProblems.map(([u, d]) => ({ label: vscode.workspace.asRelativePath(u), description: `${d.length}`, uri: u })),
      { placeHolder: withProblems.length ? 'Problems of which file?' : 'No file has problems' },
    );
    uri = picked?.uri;
  }
  if (!uri) return [];
  const path = vscode.workspace.asRelativePath(uri);
  const text = problemsText(path, vscode.languages.getDiagnostics(uri));
  return [{ kind: 'problems', uri: `${uri.toString()}#problems`, name: `problems: ${path}`, text }];
}

/**
 * The active terminal's text, by its own select-all and copy (VS Code has no API to
 * read a terminal): the clipboard is put back as it was.
 */
async function terminalOutput(): Promise<Attachment[]> {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) {
    void vscode.window.showInformationMessage('loopd: no terminal is open');
    return [];
  }
  const kept = await vscode.env.clipboard.readText();
  try {
    terminal.show(true);
    await vscode.commands.executeCommand('workbench.action.terminal.selectAll');
    await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
    await vscode.commands.executeCommand('workbench.action.terminal.clearSelection');
    const text = lastLines(await vscode.env.clipboard.readText());
    return [{ kind: 'terminal', uri: `vscode-terminal:/${encodeURIComponent(terminal.name)}`, name: `terminal: ${terminal.name}`, text }];
  } finally {
    await vscode.env.clipboard.writeText(kept);
  }
}

interface GitChange {
  uri: vscode.Uri;
}
interface GitRepository {
  rootUri: vscode.Uri;
  state: { workingTreeChanges: GitChange[]; indexChanges: GitChange[]; untrackedChanges?: GitChange[] };
  diffWithHEAD(path: string): Promise<string>;
}
interface GitApi {
  repositories: GitRepository[];
}

/** One attachment per changed file (its diff against HEAD), at most `MAX_CHANGED_FILES`. */
async function gitChanges(): Promise<Attachment[]> {
  const git = vscode.extensions.getExtension<{ getAPI(version: 1): GitApi }>('vscode.git');
  const api = git && (git.isActive ? git.exports : await git.activate()).getAPI(1);
  const repository = api?.repositories[0];
  if (!repository) {
    void vscode.window.showInformationMessage('loopd: the workspace is not a git repository');
    return [];
  }
  const { workingTreeChanges, indexChanges, untrackedChanges = [] } = repository.state;
  const changed = new Map<string, vscode.Uri>();
  for (const c of [...indexChanges, ...workingTreeChanges, ...untrackedChanges]) changed.set(c.uri.toString(), c.uri);
  if (!changed.size) {
    void vscode.window.showInformationMessage('loopd: no git changes');
    return [];
  }
  const out: Attachment[] = [];
  for (const uri of [...changed.values()].slice(0, MAX_CHANGED_FILES)) {
    const path = vscode.workspace.asRelativePath(uri);
    const diff = (await repository.diffWithHEAD(uri.fsPath).catch(() => '')) || '(a new file, not in HEAD)';
    out.push({ kind: 'changes', uri: `${uri.toString()}#changes`, name: `changes: ${path}`, text: diff });
  }
  return out;
}
