-- A real Neovim answering the agent's question (ask_user) on the real `loopd lsp`:
-- vim.ui.select offers the choices and "Something else…", which opens vim.ui.input;
-- the answer is noted in the chat of the project whose session asked, though another
-- project's file (LOOPD_FILE_B) is current by then.
-- Run: nvim --clean --headless -l ask.lua (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_FILE,
-- LOOPD_FILE_B).
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

local loopd, buf = H.attach()

local project = loopd.project(loopd.root_of(buf))
vim.cmd('Loopd ask set up a database')
-- the question comes while another project's file is current: it is still A's
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE_B))
local root_b = loopd.root_of(0)
check(root_b ~= project.root, 'B is another project')
wait('the turn ended', function() return project.last_stop ~= nil end)
check(project.last_stop == 'end_turn', 'it ended with end_turn')
check(offered ~= nil and offered.prompt == 'loopd asks: Which database?', 'the question was put')
check(table.concat(offered.items, '|') == 'sqlite|postgres|Something else…', 'with its choices')
check(asked == 'loopd asks: Which database? ', 'free text was asked for')
wait('the chat notes the answer', function()
  local text = table.concat(vim.api.nvim_buf_get_lines(project.chat.buf, 0, -1, false), '\n')
  return text:find('_answered: duckdb (Which database?)_', 1, true) ~= nil
end)

local b = loopd.projects[root_b]
check(b == nil or #b.chat.blocks == 0, "B's chat shows nothing of A's question")

for _, client in ipairs(vim.lsp.get_clients({ name = 'loopd' })) do client:stop() end
finish(true)
