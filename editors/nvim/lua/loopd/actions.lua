-- "Ask loopd" code actions: the server offers them without a question, so the
-- question is asked here, then the server's `loopd.ask` command runs with it.
local M = {}

--- Handle the `loopd.ask` client command; `call(client, method, ...)` calls a client
--- method on Neovim 0.10 and 0.11 alike.
function M.register(call)
  vim.lsp.commands['loopd.ask'] = function(cmd, ctx)
    local arg = (cmd.arguments or {})[1] or {}
    local function send(text)
      arg.prompt = text
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client then
        call(client, 'request', 'workspace/executeCommand', { command = 'loopd.ask', arguments = { arg } }, nil, ctx.bufnr)
      end
    end
    if arg.ask and not arg.prompt then
      vim.ui.input({ prompt = 'Ask loopd: ' }, function(text) if text then send(text) end end)
    else
      send(arg.prompt)
    end
  end
end

return M
