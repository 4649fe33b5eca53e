-- :Loopd rewind: pick one of the session's checkpoints (before a prompt, or redo), then
-- what to put back (code and conversation, or one of them), through vim.ui.select.
-- Files changed outside the agent since are named, and overwritten only when the
-- person picks that (the request again with `force`).
local R = {}

local SCOPES = {
  { 'both', 'the code and the conversation' },
  { 'code', 'the code only' },
  { 'conversation', 'the conversation only' },
}

local function label(item)
  if item.redo then return 'redo: back to before the last restore' end
  return string.format('%d. before “%s”  %s', item.prompt, item.label, item.createdAt or '')
end

--- Put `params` back (`loopd/session/restore`); a refusal naming files changed since
--- asks whether to overwrite them.
function R.restore(request, notify, project, params)
  request(project, 'loopd/session/restore', params, function(r)
    if not r then return end
    if r.restored then return notify(r.summary) end
    vim.ui.select({ 'Overwrite them', 'Keep them' }, { prompt = r.summary }, function(choice)
      if choice ~= 'Overwrite them' then return notify('nothing was restored') end
      R.restore(request, notify, project, vim.tbl_extend('force', params, { force = true }))
    end)
  end)
end

--- `request(project, method, params, on_result)` and `notify(msg, level)` are the
--- plugin's own; `session` the project's session id.
function R.pick(request, notify, project, session)
  request(project, 'loopd/session/checkpoints', { sessionId = session }, function(result)
    if not result then return end
    local items = vim.deepcopy(result.checkpoints)
    if result.redo then table.insert(items, { redo = true }) end
    if #items == 0 then return notify('no checkpoints yet: one is taken before each prompt') end
    vim.ui.select(items, { prompt = 'Rewind loopd to', format_item = label }, function(item)
      if not item then return end
      vim.ui.select(SCOPES, { prompt = 'Put back', format_item = function(s) return s[2] end }, function(scope)
        if not scope then return end
        local params = { sessionId = session, scope = scope[1] }
        if item.redo then params.redo = true else params.prompt = item.prompt end
        R.restore(request, notify, project, params)
      end)
    end)
  end)
end

return R
