-- A loopd on another machine (`loopd serve` on a dev server or in a container):
-- `setup({ remote = { url = ..., fingerprint = ..., token_file = ... } })` starts
-- `loopd lsp --remote URL`, a local bridge; the sessions, files and commands are the
-- server's, the approvals are asked here.
--
-- The token is never an argument (any process may read another's command line) and
-- never in `cmd_env` (Neovim's LSP log records a client's `cmd_env` at level INFO):
-- the bridge reads it from `token_file`, or from LOOPD_REMOTE_TOKEN in the
-- environment Neovim itself was started with.
local M = {}

--- `cmd` made `loopd lsp --remote URL [--fingerprint F] [--token-file P]` when
--- `remote.url` is set, the bridge's arguments right after `lsp`; `cmd` as it is
--- otherwise (or when it is a function: an RPC connection of the user's own).
function M.command(cmd, remote)
  if type(cmd) ~= 'table' or type(remote) ~= 'table' or (remote.url or '') == '' then return cmd end
  local bridge = { '--remote', remote.url }
  if (remote.fingerprint or '') ~= '' then vim.list_extend(bridge, { '--fingerprint', remote.fingerprint }) end
  if (remote.token_file or '') ~= '' then
    vim.list_extend(bridge, { '--token-file', vim.fs.normalize(remote.token_file) })
  end
  local out, placed = {}, false
  for _, arg in ipairs(cmd) do
    table.insert(out, arg)
    if arg == 'lsp' and not placed then
      vim.list_extend(out, bridge)
      placed = true
    end
  end
  if not placed then vim.list_extend(out, bridge) end
  return out
end

--- What is wrong with `remote`, or nil: a `token` given in the config is refused
--- (see the module's comment), and a URL needs somewhere to find the token.
function M.problem(remote)
  if type(remote) ~= 'table' or (remote.url or '') == '' then return nil end
  if remote.token ~= nil then
    return 'remote.token is not read: put the token in remote.token_file, or in LOOPD_REMOTE_TOKEN'
      .. " in Neovim's environment (a token in cmd_env would be written to the LSP log)"
  end
  if (remote.token_file or '') == '' and (vim.env.LOOPD_REMOTE_TOKEN or '') == '' then
    return 'remote.url needs the token: remote.token_file, or LOOPD_REMOTE_TOKEN in the environment'
  end
  return nil
end

return M
