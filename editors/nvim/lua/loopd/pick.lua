-- The pickers of :Loopd sessions, :Loopd mode and :Loopd model, over vim.ui.select (so
-- picker plugins show them).
local M = {}

--- Choose one of a project's stored sessions (loopd/session/list's); `on_choice(session)`,
--- nil when dismissed.
function M.session(sessions, on_choice)
  vim.ui.select(sessions, {
    prompt = 'Load a loopd session',
    format_item = function(s) return (s.title or s.sessionId) .. '  ' .. (s.updatedAt or '') end,
  }, on_choice)
end

--- Choose a value of the session's option `id` among its `options` (configOptions);
--- `on_value(value)`, nil when dismissed. An option the session lacks offers nothing.
function M.option(options, id, on_value)
  for _, o in ipairs(options) do
    if o.id == id then
      return vim.ui.select(o.options, {
        prompt = 'loopd ' .. id,
        format_item = function(c) return c.name .. (c.value == o.currentValue and ' (current)' or '') end,
      }, function(c) on_value(c and c.value) end)
    end
  end
end

return M
