"""Workspace trust, in one room: a folder's `.loopd/config.toml` is inert until the
person vouches for exactly its bytes, and what it runs is pinned with it.

- `store.py`: the trust record (`$LOOPD_HOME/trust.json`) and the one read of a
  workspace file whose hash is checked (`TrustStore`, `WorkspaceFile`);
- `gate.py`: which keys an untrusted file may not set (`UNTRUSTED_KEYS`), gathered
  and dropped before the file is applied;
- `pins.py`: the files a trusted config's runtimes run, hashed with it;
- `prompt.py`: the editor's question at a session's first turn, and the
  `loopd.trust` command (`WorkspaceTrust`); `loopd trust DIR` is `cli/trust.py`.

Nothing is imported here: `loopd.config` imports the store and the gate, and the
prompt imports `loopd.config`.
"""
