/**
 * An approval as a modal dialog: the message names the command or path, the
 * buttons are the options the server offered (in its order), plus "Show diff" for
 * edits. Pure: the dialog function is passed in. A dismissed dialog rejects once
 * (fail closed); "Show diff" opens the diff and asks again.
 */

import type { PermissionOption } from './protocol';
import type { Approval } from './webview/state';

export const SHOW_DIFF = 'Show diff';

export interface Dialog {
  message: string;
  detail: string;
  buttons: string[];
}

export function dialogFor(approval: Approval): Dialog {
  const detail: string[] = [];
  if (approval.subject) {
    detail.push(approval.kind === 'execute' ? `Command: ${approval.subject}` : `Path: ${approval.subject}`);
  }
  if (approval.diff) {
    detail.push(approval.diff.oldText === null ? 'Creates a new file.' : 'Changes the file (see "Show diff").');
  }
  const buttons = approval.options.map((o) => o.name);
  if (approval.diff) buttons.push(SHOW_DIFF);
  return { message: `loopd asks: ${approval.title}`, detail: detail.join('\n'), buttons };
}

export type Pick = (dialog: Dialog) => Promise<string | undefined>;

/**
 * Ask until the person picks an option: the chosen option id, or the reject-once
 * option's id when the dialog is dismissed (undefined if the server offered none).
 */
export async function askApproval(
  approval: Approval,
  pick: Pick,
  showDiff: (approval: Approval) => Promise<void>,
): Promise<string | undefined> {
  const dialog = dialogFor(approval);
  for (;;) {
    const answer = await pick(dialog);
    if (answer === SHOW_DIFF) {
      await showDiff(approval);
      continue;
    }
    const option = approval.options.find((o) => o.name === answer);
    return (option ?? rejectOnce(approval.options))?.optionId;
  }
}

export function rejectOnce(options: PermissionOption[]): PermissionOption | undefined {
  return options.find((o) => o.kind === 'reject_once') ?? options.find((o) => o.kind === 'reject_always');
}
