-- A real Neovim logging in with :Loopd login on the real `loopd lsp` that has no model
-- provider: `loopd login` runs in a terminal split (answered here through the
-- terminal's channel: Ollama at LOOPD_URL, which takes no key, and its first model), the split closes when it succeeds, and the server's `loopd.login` then
-- says a runtime is usable, which the person is told.
-- Run: nvim --clean --headless -l login.lua (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_FILE,
-- LOOPD_URL). "NVIM-E2E: PASS" means it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local finish, check, wait = H.finish, H.check, H.wait

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local told = {}
vim.notify = function(msg) table.insert(told, msg) end

local loopd = require('loopd')
local py = assert(vim.env.LOOPD_PY)
loopd.setup({ cmd = { py, '-m', 'loopd', 'lsp' } })
local derive = require('loopd.login').command
check(vim.deep_equal(derive(loopd.config.cmd), { py, '-m', 'loopd', 'login' }),
  'the login command is the server command with `lsp` replaced by `login`')
check(vim.deep_equal(derive({ 'loopd', 'lsp', '--tcp', '127.0.0.1:9000' }), { 'loopd', 'login' }),
  "without the server's own arguments")
check(derive({ 'my-wrapper' }) == nil, 'a wrapper has no derived login command')
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)

local before
loopd.client(buf):request('workspace/executeCommand', { command = 'loopd.login', arguments = {} },
  function(_, r) before = r end, buf)
wait('the server said whether it has a provider', function() return before ~= nil end)
check(before.loggedIn == false, 'no model provider before the login')

vim.cmd('Loopd login')
local term = vim.api.nvim_get_current_buf()
check(vim.bo[term].buftype == 'terminal', 'a terminal split opened with the focus')
local win = vim.api.nvim_get_current_win()
local function shown() return table.concat(vim.api.nvim_buf_get_lines(term, 0, -1, false), '\n') end
local function answer(prompt, text)
  local asked = vim.wait(15000, function()
    return vim.api.nvim_buf_is_valid(term) and shown():find(prompt, 1, true) ~= nil
  end, 10)
  if not asked then H.log(vim.api.nvim_buf_is_valid(term) and shown() or 'the terminal is gone') end
  check(asked, 'the terminal asks ' .. prompt)
  vim.api.nvim_chan_send(vim.bo[term].channel, text .. '\r')
end
answer('Choose 1-6', '4') -- Ollama
answer('Server URL', assert(vim.env.LOOPD_URL))
answer('Choose 1-1', '1') -- its only model
wait('the person is told', function() return #told > 0 end)
check(told[#told] == 'loopd: logged in: a model provider is ready', 'told: ' .. tostring(told[#told]))
check(not vim.api.nvim_win_is_valid(win), 'the terminal split closed')

loopd.client(buf):stop()
finish(true)
