/**
 * One panel's session, between the server and the UI. It forwards: the person's
 * prompts, stops, option changes and session choices go to the server as
 * `loopd/session/*` requests; what the server says comes back as panel state
 * (the same `reduce` the webview runs), approvals and a turn status. It decides
 * nothing the server decides. No `vscode` import: the protocol tests drive it
 * against a real `loopd lsp`.
 */

import { rejectOnce } from './approval';
import {
  type CheckpointsResult,
  type ConfigOption,
  type ContentBlock,
  type ListResult,
  type McpServer,
  type Mention,
  type MentionsResult,
  Method,
  type NewSessionResult,
  type PermissionOutcome,
  type PermissionParams,
  type PromptResult,
  type RestoreResult,
  type RestoreScope,
  type SessionInfo,
  type SessionNotification,
} from './protocol';
import {
  type Approval,
  approvalOf,
  type HostMessage,
  initialState,
  type PanelState,
  reduce,
} from './webview/state';

export interface Rpc {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void> | void;
}

export type Activity = 'idle' | 'running' | 'waiting';

export interface SessionUi {
  /** Show a message in the panel (if it is open). */
  post(message: HostMessage): void;
  /** Ask the person also in a modal dialog (opt-in): an option id, or undefined for no answer. */
  ask?(approval: Approval): Promise<string | undefined>;
  /** The status bar and badge follow this. */
  activity(activity: Activity, waiting: number): void;
}

/** Defaults for new sessions, applied through `setConfigOption` (runtime first). */
export interface Defaults {
  runtime?: string;
  model?: string;
  mode?: string;
}

export interface Remembered {
  get(): string | undefined;
  set(sessionId: string | undefined): void;
}

/**
 * Whether a restore may overwrite these files, changed outside the agent since the
 * checkpoint (the person is asked); without an answer nothing is overwritten.
 */
export type ConfirmOverwrite = (paths: string[], summary: string) => Promise<boolean>;

interface Pending {
  approval: Approval;
  resolve(optionId: string | undefined): void;
}

export class Controller {
  state: PanelState = initialState();
  private pending: Pending[] = [];
  private nextApproval = 0;

  constructor(
    private readonly rpc: Rpc,
    private readonly ui: SessionUi,
    private readonly cwd: string,
    private readonly remembered: Remembered,
    private readonly options: {
      defaults?: Defaults;
      approvalTimeoutMs?: number;
      mcpServers?: McpServer[];
      confirmOverwrite?: ConfirmOverwrite;
    } = {},
  ) {}

  get sessionId(): string | undefined {
    return this.state.sessionId;
  }

  /** Everything the panel needs to draw itself from scratch (a new webview). */
  snapshot(): HostMessage[] {
    return [{ type: 'snapshot', state: this.state }];
  }

  private show(message: HostMessage): void {
    this.state = reduce(this.state, message);
    this.ui.post(message);
  }

  private activity(): void {
    const waiting = this.pending.length;
    this.ui.activity(waiting ? 'waiting' : this.state.turn.running ? 'running' : 'idle', waiting);
  }

  // -- from the server -------------------------------------------------------------

  onUpdate(notification: SessionNotification): void {
    if (notification.sessionId !== this.state.sessionId) return;
    this.show({ type: 'update', sessionId: notification.sessionId, update: notification.update });
  }

  /** `loopd/session/requestPermission`: the panel's card asks (and a modal, when opted in); the first answer wins. */
  async onPermission(params: PermissionParams, withdrawn?: Promise<void>): Promise<PermissionOutcome> {
    const approval = approvalOf(`approval-${++this.nextApproval}`, params.toolCall, params.options);
    let settle: (optionId: string | undefined) => void = () => {};
    const answered = new Promise<string | undefined>((resolve) => {
      settle = resolve;
    });
    const entry: Pending = { approval, resolve: settle };
    this.pending.push(entry);
    this.showApproval();
    this.activity();
    const timeout = this.options.approvalTimeoutMs;
    // No answer in time is a rejection (fail closed), as the server's own timeout is.
    const timer = timeout ? setTimeout(() => settle(rejectOnce(params.options)?.optionId), timeout) : undefined;
    withdrawn?.then(() => settle(undefined));
    void this.ui.ask?.(approval).then(settle, () => settle(undefined));
    try {
      const optionId = await answered;
      return optionId === undefined
        ? { outcome: { outcome: 'cancelled' } }
        : { outcome: { outcome: 'selected', optionId } };
    } finally {
      if (timer) clearTimeout(timer);
      this.pending = this.pending.filter((p) => p !== entry);
      this.showApproval();
      this.activity();
    }
  }

  /** The person answered in the panel. */
  answer(approvalId: string, optionId: string): void {
    this.pending.find((p) => p.approval.id === approvalId)?.resolve(optionId);
  }

  get waiting(): Approval[] {
    return this.pending.map((p) => p.approval);
  }

  private showApproval(): void {
    this.show({ type: 'approval', approval: this.pending[0]?.approval });
  }

  // -- from the person -------------------------------------------------------------

  private get mcpServers(): McpServer[] {
    return this.options.mcpServers ?? [];
  }

  /** What `@` offers from the session (its MCP resources), asked again each time: servers change their lists. */
  async mentions(): Promise<Mention[]> {
    const sessionId = this.state.sessionId;
    if (!sessionId) return [];
    const result = await this.rpc.sendRequest<MentionsResult>(Method.mentions, { sessionId });
    this.show({ type: 'mentions', mentions: result.mentions });
    return result.mentions;
  }

  async newSession(): Promise<string> {
    const result = await this.rpc.sendRequest<NewSessionResult>(Method.new, { cwd: this.cwd, mcpServers: this.mcpServers });
    this.show({ type: 'reset', sessionId: result.sessionId, configOptions: result.configOptions, cwd: this.cwd });
    this.remembered.set(result.sessionId);
    await this.applyDefaults(result.configOptions);
    return result.sessionId;
  }

  private async applyDefaults(options: ConfigOption[]): Promise<void> {
    const defaults = this.options.defaults ?? {};
    for (const [id, value] of [
      ['runtime', defaults.runtime],
      ['model', defaults.model],
      ['mode', defaults.mode],
    ] as const) {
      const current = (id === 'runtime' ? options : this.state.configOptions).find((o) => o.id === id);
      if (value && current && current.currentValue !== value) await this.setConfig(id, value);
    }
  }

  /** Load a stored session: the server replays its history as updates. */
  async load(sessionId: string): Promise<void> {
    this.show({ type: 'reset', sessionId, configOptions: [], cwd: this.cwd });
    const result = await this.rpc.sendRequest<{ configOptions: ConfigOption[] }>(Method.load, {
      sessionId,
      cwd: this.cwd,
      mcpServers: this.mcpServers,
    });
    this.show({ type: 'update', sessionId, update: { sessionUpdate: 'config_option_update', configOptions: result.configOptions } });
    this.remembered.set(sessionId);
    await this.checkpoints();
  }

  /**
   * The session to show when the panel (re)starts: the remembered one, else this
   * workspace's most recent one (the window may reload before VS Code saved what
   * it remembered), else a new one.
   */
  async resume(): Promise<string> {
    const page = await this.rpc.sendRequest<ListResult>(Method.list, { cwd: this.cwd });
    for (const candidate of [this.remembered.get(), page.sessions[0]?.sessionId]) {
      if (!candidate) continue;
      try {
        await this.load(candidate);
        return candidate;
      } catch {
        this.remembered.set(undefined);
      }
    }
    return this.newSession();
  }

  async ensureSession(): Promise<string> {
    return this.state.sessionId ?? (await this.resume());
  }

  /** Run one turn to its end; the stop reason. */
  async prompt(blocks: ContentBlock[]): Promise<string> {
    const sessionId = await this.ensureSession();
    const messageId = `user-${Date.now()}`;
    for (const content of blocks) {
      this.show({ type: 'update', sessionId, update: { sessionUpdate: 'user_message_chunk', content, messageId } });
    }
    return this.turn(Method.prompt, { sessionId, prompt: blocks });
  }

  /**
   * Carry on the turn a crash cut off (`loopd/session/continue`, the panel's
   * Continue button): a new turn, the person's choice; the stop reason.
   */
  async continue(): Promise<string> {
    const sessionId = await this.ensureSession();
    return this.turn(Method.continue, { sessionId });
  }

  /** One turn (a prompt, a continue) from its start to its end, shown as it runs. */
  private async turn(method: string, params: unknown): Promise<string> {
    this.show({ type: 'turn', turn: { running: true } });
    this.activity();
    try {
      const result = await this.rpc.sendRequest<PromptResult>(method, params);
      const verification = result._meta?.loopd?.verification;
      this.show({ type: 'turn', turn: { running: false, stopReason: result.stopReason, verification } });
      return result.stopReason;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.show({ type: 'turn', turn: { running: false, stopReason: 'error', error: message } });
      throw error;
    } finally {
      this.activity();
      await this.checkpoints();
    }
  }

  // -- checkpoints (loopd/session/checkpoints|restore|fork) ---------------------------

  /** The session's checkpoints, one before each prompt, asked again and shown. */
  async checkpoints(): Promise<CheckpointsResult> {
    const sessionId = this.state.sessionId;
    let result: CheckpointsResult = { checkpoints: [], redo: false };
    if (sessionId) {
      // A server without checkpoints (or with them off) has none to show.
      result = await this.rpc.sendRequest<CheckpointsResult>(Method.checkpoints, { sessionId }).catch(() => result);
    }
    if (sessionId === this.state.sessionId) this.show({ type: 'checkpoints', checkpoints: result });
    return result;
  }

  /**
   * Back to before prompt `point` (undefined: redo the last restore), for `scope`.
   * Files changed outside the agent since are never overwritten unasked: the server
   * names them and changes nothing, the person is asked, and only a yes sends
   * `force`. Whether anything was restored.
   */
  async restore(point: number | undefined, scope: RestoreScope = 'both'): Promise<boolean> {
    const sessionId = await this.ensureSession();
    const target = point === undefined ? { redo: true } : { prompt: point, scope };
    const ask = (force: boolean) =>
      this.rpc.sendRequest<RestoreResult>(Method.restore, { sessionId, ...target, ...(force ? { force } : {}) });
    let result = await ask(false);
    if (!result.restored) {
      const confirm = this.options.confirmOverwrite ?? (async () => false);
      if (await confirm(result.changedOutside, result.summary)) result = await ask(true);
    }
    await this.checkpoints();
    return result.restored;
  }

  /** A new session whose conversation is the one before prompt `point`, shown in the panel. */
  async fork(point: number): Promise<string> {
    const sessionId = await this.ensureSession();
    const result = await this.rpc.sendRequest<NewSessionResult>(Method.fork, {
      sessionId,
      beforePrompt: point,
      cwd: this.cwd,
      mcpServers: this.mcpServers,
    });
    await this.load(result.sessionId);
    return result.sessionId;
  }

  /** Edit prompt `point`: restore the code and the conversation to before it, then run `blocks`. */
  async edit(point: number, blocks: ContentBlock[]): Promise<string | undefined> {
    if (!(await this.restore(point, 'both'))) return undefined;
    return this.prompt(blocks);
  }

  async cancel(): Promise<void> {
    if (this.state.sessionId) await this.rpc.sendNotification(Method.cancel, { sessionId: this.state.sessionId });
  }

  async list(): Promise<SessionInfo[]> {
    const sessions: SessionInfo[] = [];
    let cursor: string | undefined;
    do {
      const page: ListResult = await this.rpc.sendRequest<ListResult>(Method.list, { cwd: this.cwd, cursor });
      sessions.push(...page.sessions);
      cursor = page.nextCursor;
    } while (cursor && sessions.length < 500);
    this.show({ type: 'sessions', sessions });
    return sessions;
  }

  async delete(sessionId: string): Promise<void> {
    await this.rpc.sendRequest(Method.delete, { sessionId });
    if (sessionId === this.state.sessionId) {
      this.remembered.set(undefined);
      this.show({ type: 'reset', configOptions: [], cwd: this.cwd });
    }
    await this.list();
  }

  async setConfig(configId: string, value: string): Promise<void> {
    const sessionId = await this.ensureSession();
    const result = await this.rpc.sendRequest<{ configOptions: ConfigOption[] }>(Method.setConfigOption, {
      sessionId,
      configId,
      value,
    });
    this.show({ type: 'update', sessionId, update: { sessionUpdate: 'config_option_update', configOptions: result.configOptions } });
  }
}
