-- A real Neovim answering the agent's question (ask_user) on the real `loopd lsp`:
-- vim.ui.select offers the choices and "Something else…", which opens vim.ui.input.
-- Run: nvim --clean --headless -l ask.lua (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_FILE).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local check, wait, finish = H.check, H.wait, H.finish

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local offered, asked = nil, nil
vim.ui.select = function(items, opts, on_choice)
  offered = { items = items, prompt = opts.prompt }
  on_choice(items[#items], #items) -- "Something else…"
end
vim.ui.input = function(opts, on_confirm)
  asked = opts.prompt
  on_confirm('duckdb')
end

local loopd = require('loopd')
loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), '-m', 'loopd', 'lsp' } })
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)

vim.cmd('Loopd ask set up a database')
wait('the turn ended', function() return loopd.state.last_stop ~= nil end)
check(loopd.state.last_stop == 'end_turn', 'it ended with end_turn')
check(offered ~= nil and offered.prompt == 'loopd asks: Which database?', 'the question was put')
check(table.concat(offered.items, '|') == 'sqlite|postgres|Something else…', 'with its choices')
check(asked == 'loopd asks: Which database? ', 'free text was asked for')

loopd.client(buf):stop()
finish(true)
