-- A real Neovim with `setup({ remote = ... })` on a real `loopd serve`: the plugin
-- starts `loopd lsp --remote URL` (the token in a file, on no command line), a turn's
-- reply streams into the chat, and :checkhealth names the remote server.
-- Run: nvim --clean --headless -l remote.lua (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_FILE,
-- LOOPD_REMOTE_URL, LOOPD_FINGERPRINT, LOOPD_TOKEN_FILE).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local check, wait, finish = H.check, H.wait, H.finish

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local loopd = require('loopd')
local url, token_file = assert(vim.env.LOOPD_REMOTE_URL), assert(vim.env.LOOPD_TOKEN_FILE)
local token = vim.trim(table.concat(vim.fn.readfile(token_file), '\n'))
loopd.setup({
  cmd = { assert(vim.env.LOOPD_PY), '-m', 'loopd', 'lsp' },
  remote = { url = url, fingerprint = assert(vim.env.LOOPD_FINGERPRINT), token_file = token_file },
})
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end, 60000)

local client = loopd.client(buf)
local cmd = table.concat(client.config.cmd, ' ')
check(cmd:find('lsp --remote ' .. url, 1, true) ~= nil, 'it started the bridge: ' .. cmd)
check(cmd:find(token, 1, true) == nil, 'the token is on no command line')
check(not vim.inspect(client.config.cmd_env or {}):find(token, 1, true), 'nor in cmd_env')
check((client.server_capabilities.experimental or {}).loopd ~= nil, "the server's daemon speaks the extension")

local project = loopd.project(loopd.root_of(buf))
vim.cmd('Loopd ask hello')
wait('the turn ended', function() return project.last_stop ~= nil end, 60000)
check(project.last_stop == 'end_turn', 'it ended with end_turn')
wait('the reply is in the chat', function()
  local text = table.concat(vim.api.nvim_buf_get_lines(project.chat.buf, 0, -1, false), '\n')
  return text:find('hello from the server', 1, true) ~= nil
end)

vim.cmd('checkhealth loopd')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
check(health:find('remote server: ' .. url, 1, true) ~= nil, ':checkhealth names the remote server')
check(health:find(token, 1, true) == nil, 'and not the token')

for _, c in ipairs(vim.lsp.get_clients({ name = 'loopd' })) do c:stop() end
wait('the bridge ended', function() return #vim.lsp.get_clients({ name = 'loopd' }) == 0 end)
finish(true)
