-- :Loopd login: `loopd login` (pick a provider, paste its key, pick a model) runs in a
-- terminal split, since it asks in a terminal; when it ends, the server's `loopd.login`
-- command says whether a runtime is usable now (the server finds a stored login
-- without a restart).
local M = {}

--- The login command derived from the server command: `lsp` becomes `login` and the
--- server's own arguments after it are dropped (`{ 'loopd', 'lsp', '--tcp', ... }` →
--- `{ 'loopd', 'login' }`); nil when `cmd` has no `lsp` (a wrapper: set `login_cmd`).
function M.command(cmd)
  if type(cmd) ~= 'table' then return nil end -- a function (an RPC connection): no command
  for i = #cmd, 1, -1 do
    if cmd[i] == 'lsp' then
      local out = vim.list_slice(cmd, 1, i)
      out[i] = 'login'
      return out
    end
  end
end

--- Run `cmd` in a focused terminal split at the bottom; `on_exit(code)` once it ends.
--- The split closes when it succeeded and stays open (to be read) when it failed.
function M.run(cmd, env, on_exit)
  vim.cmd('botright 15split')
  local win = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_win_set_buf(win, buf)
  vim.bo[buf].bufhidden = 'wipe'
  local opts = {
    env = env,
    on_exit = function(_, code)
      vim.schedule(function()
        if code == 0 and vim.api.nvim_win_is_valid(win) then vim.api.nvim_win_close(win, true) end
        on_exit(code)
      end)
    end,
  }
  local job
  if vim.fn.has('nvim-0.11') == 1 then
    opts.term = true
    job = vim.fn.jobstart(cmd, opts)
  else
    job = vim.fn.termopen(cmd, opts)
  end
  vim.cmd('startinsert')
  return buf, job
end

--- Say how `cmd` ended (`code`) and whether a model provider is ready now, as the
--- project's server (`client`, nil when none runs) finds it: `execute(client,
--- command, on_result)` runs its `loopd.login` command.
function M.report(cmd, code, client, execute, notify)
  local exited = string.format('`%s` exited with %d', table.concat(cmd, ' '), code)
  if not client then return notify(exited, code == 0 and vim.log.levels.INFO or vim.log.levels.WARN) end
  execute(client, 'loopd.login', function(err, r)
    if err then return notify('loopd.login: ' .. tostring(err.message), vim.log.levels.ERROR) end
    if not r.loggedIn then return notify('still no model provider (' .. exited .. ')', vim.log.levels.WARN) end
    notify(code == 0 and 'logged in: a model provider is ready' or (exited .. '; a model provider is ready anyway'))
  end)
end

return M
