-- A real Neovim steering a running turn with :Loopd steer: the word shows in the chat,
-- the held reply is interrupted and the turn goes on with it; with no turn running,
-- :Loopd steer sends a prompt; :Loopd continue reaches the server. Run: nvim --clean
-- --headless -l steer.lua (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_LAUNCHER, LOOPD_FILE).
-- "NVIM-E2E: PASS" means it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local finish, check, wait = H.finish, H.check, H.wait

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local loopd = require('loopd')
loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), assert(vim.env.LOOPD_LAUNCHER) } })
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)

local project = loopd.project(loopd.root_of(buf))
local function chat_text()
  local chat_buf = project.chat.buf
  if not chat_buf then return '' end
  return table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n')
end

vim.cmd('Loopd ask rewrite everything')
wait('the reply streams', function() return chat_text():find('rewriting it all', 1, true) ~= nil end)
vim.cmd('Loopd steer only the tests please')
wait('the turn ended', function() return project.last_stop ~= nil end)
check(project.last_stop == 'end_turn', 'it ended with end_turn (got ' .. tostring(project.last_stop) .. ')')
wait('the chat shows the word and the answer to it', function()
  local text = chat_text()
  return text:find('only the tests please', 1, true) ~= nil and text:find('Only the tests, then.', 1, true) ~= nil
end)

project.last_stop = nil
vim.cmd('Loopd steer and now the docs')
wait('with no turn running it became a prompt', function() return project.last_stop == 'end_turn' end)
check(chat_text():find('Docs too.', 1, true) ~= nil, 'the prompt was answered')

-- :Loopd continue asks the server to carry on a turn a crash cut off; this one ended.
project.last_stop = nil
vim.cmd('Loopd continue')
wait('the continue was answered', function() return project.last_stop ~= nil end)
check(project.last_stop == 'end_turn', 'continue ended with end_turn (got ' .. tostring(project.last_stop) .. ')')
wait('the server said there is nothing to continue', function()
  return chat_text():find('Nothing to continue: the last turn ended.', 1, true) ~= nil
end)

loopd.client(buf):stop()
finish(true)
