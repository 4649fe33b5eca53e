-- :checkhealth loopd — is Neovim new enough, is setup() called, can the server be
-- started, which loopd servers run (per project root) and did they agree to the
-- extension the chat and the approval window need.
local M = {}

local health = vim.health

local function check_neovim()
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or newer is needed', { 'Upgrade Neovim' })
  end
end

local function check_command(loopd)
  local cmd = loopd.config.cmd or {}
  local exe = cmd[1]
  if not exe or vim.fn.executable(exe) ~= 1 then
    return health.error(string.format('%s is not executable', tostring(exe)), {
      'Install loopd: `uv tool install loopd-agent` (or `pipx install loopd-agent`)',
      "Or give its full path: require('loopd').setup({ cmd = { '/path/to/loopd', 'lsp' } })",
    })
  end
  health.ok(string.format('server command: %s (%s)', table.concat(cmd, ' '), vim.fn.exepath(exe)))
  if cmd[2] ~= 'lsp' then return end -- a wrapper: nothing more to ask it
  local done = vim.system({ exe, '--version' }, { text = true }):wait(10000)
  if done.code == 0 then
    health.ok('version: ' .. vim.trim(done.stdout or ''))
  else
    health.warn('`' .. exe .. ' --version` failed: ' .. vim.trim(done.stderr or ''), { 'Run `loopd doctor`' })
  end
end

local function check_clients(loopd)
  local clients = vim.lsp.get_clients({ name = loopd.config.name })
  if #clients == 0 then
    return health.info('no loopd server running yet: it starts when a file of a project is opened')
  end
  for _, client in ipairs(clients) do
    local caps = (client.server_capabilities or {}).experimental or {}
    local what = string.format('server for %s (client %d)', tostring(client.root_dir), client.id)
    if caps.loopd then
      local project = loopd.projects[client.root_dir]
      local session = project and project.session or 'none yet'
      local sealed = require('loopd.seal').line(project and project.verification)
      health.ok(what .. ': extension v' .. tostring(caps.loopd.version) .. ', session ' .. session
        .. (sealed ~= '' and (', last seal: ' .. (sealed:gsub('^loopd: ', ''))) or ''))
    else
      health.warn(what .. ': no loopd extension; the chat and approval window need it', {
        'Is `cmd` a loopd new enough to speak `loopd/session/*`? Run `loopd doctor`',
      })
    end
  end
end

local function check_remote(loopd)
  local remote = loopd.config.remote
  if type(remote) ~= 'table' or (remote.url or '') == '' then return end
  local problem = require('loopd.remote').problem(remote)
  if problem then return health.error(problem, { 'Run `loopd serve token` on the server for a token' }) end
  local from = (remote.token_file or '') ~= '' and ('token file ' .. remote.token_file) or 'LOOPD_REMOTE_TOKEN'
  health.ok(string.format('remote server: %s (token from %s)', remote.url, from))
end

function M.check()
  health.start('loopd')
  check_neovim()
  local loopd = package.loaded['loopd']
  if not loopd or not loopd.configured then
    return health.warn("setup() was not called", { "Call require('loopd').setup({...}) in your config" })
  end
  health.ok(string.format('setup() called; approvals: %s', loopd.config.approval))
  check_command(loopd)
  check_remote(loopd)
  check_clients(loopd)
end

return M
