from tooltest import Call

from loopd.protocol.events import PlanEntry
from loopd.tools import ToolEnv


async def test_plan_replaces_the_list_and_reaches_the_session(call: Call, env: ToolEnv) -> None:
    published: list[tuple[PlanEntry, ...]] = []

    async def on_plan(entries: tuple[PlanEntry, ...]) -> None:
        published.append(entries)

    env.on_plan = on_plan
    out = await call(
        "plan",
        entries=[
            {"content": "Read the code", "status": "completed", "priority": "high"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending", "priority": "low"},
        ],
    )
    expected = (
        PlanEntry("Read the code", "high", "completed"),
        PlanEntry("Fix the bug", "medium", "in_progress"),
        PlanEntry("Run the tests", "low", "pending"),
    )
    assert published == [expected]
    assert env.plan == expected
    assert out.declaration.title == "Update plan"
    assert out.declaration.kind == "think"
    assert (out.declaration.reads, out.declaration.writes) == ((), ())
    assert out.result.output == (
        "Plan updated (1 of 3 completed):\n[x] Read the code\n[~] Fix the bug\n[ ] Run the tests"
    )

    await call("plan", entries=[{"content": "Done", "status": "completed"}])
    assert env.plan == (PlanEntry("Done", "medium", "completed"),)
    assert len(published) == 2


async def test_plan_without_a_listener_is_kept_in_the_env(call: Call, env: ToolEnv) -> None:
    await call("plan", entries=[])
    assert env.plan == ()
