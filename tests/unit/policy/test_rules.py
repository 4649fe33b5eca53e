import pytest

from loopd.engine.ports import Declaration, Verdict
from loopd.policy.rules import (
    MatchContext,
    Rule,
    RuleSet,
    escape_glob,
    first_match,
    path_matches,
)
from loopd.protocol.errors import ConfigError

CTX = MatchContext(roots=("/ws",), home="/home/me")


def bash(command: str) -> Declaration:
    return Declaration(title=command, kind="execute", command=command)


def edit(*paths: str) -> Declaration:
    return Declaration(title="edit", kind="edit", reads=paths, writes=paths)


def read(*paths: str) -> Declaration:
    return Declaration(title="read", kind="read", reads=paths)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("bash", Rule("bash")),
        ("Bash(git diff:*)", Rule("bash", "git diff:*")),
        ("edit(src/**)", Rule("edit", "src/**")),
        (" read( **/.env ) ", Rule("read", "**/.env")),
        ("*", Rule("*")),
        ("mcp.server-tool(x)", Rule("mcp.server-tool", "x")),
    ],
)
def test_rules_parse_and_print_back(text: str, rule: Rule) -> None:
    assert Rule.parse(text) == rule
    assert Rule.parse(str(rule)) == rule


@pytest.mark.parametrize("text", ["", "bash(", "(x)", "bash()", "ba sh", "bash(x) y"])
def test_malformed_rules_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        Rule.parse(text)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/**", "/ws/src/a/b.py", True),
        ("src/**", "/ws/lib/a.py", False),
        ("src/*.py", "/ws/src/a.py", True),
        ("src/*.py", "/ws/src/a/b.py", False),
        ("**/.env", "/ws/.env", True),
        ("**/.env", "/ws/deep/er/.env", True),
        (".env", "/ws/deep/.env", True),
        ("*.pem", "/ws/certs/server.pem", True),
        ("*.pem", "/elsewhere/server.pem", False),
        ("/etc/**", "/etc/passwd", True),
        ("~/.config/**", "/home/me/.config/x", True),
        ("file?.txt", "/ws/file1.txt", True),
        ("file?.txt", "/ws/file10.txt", False),
        (escape_glob("/ws/odd*name?.txt"), "/ws/odd*name?.txt", True),
        (escape_glob("/ws/odd*name?.txt"), "/ws/oddXXname1.txt", False),
    ],
)
def test_path_globs(pattern: str, path: str, matches: bool) -> None:
    assert path_matches(pattern, path, CTX, fold=False) is matches


def test_deny_globs_ignore_case_but_allow_globs_do_not() -> None:
    assert path_matches("**/.env", "/ws/.ENV", CTX, fold=True)
    assert not path_matches("**/.env", "/ws/.ENV", CTX, fold=False)


def _match(rules: str, action: Verdict, tool: str, decl: Declaration) -> Rule | None:
    return first_match((Rule.parse(rules),), action, tool, decl, CTX)


@pytest.mark.parametrize(
    ("rule", "command", "allowed"),
    [
        ("bash(git status:*)", "git status", True),
        ("bash(git status:*)", "git status --short", True),
        ("bash(git status:*)", "git status && rm -rf ~", False),
        ("bash(git status:*)", "git statusx", False),
        ("bash(git status:*)", "git status > out", False),
        ("bash(npm test)", "npm test", True),
        ("bash(npm test)", "npm test -- --watch", False),
        ("bash(make > log)", "make > log", True),
        ("bash", "anything at all > x", True),
        ("*", "anything", True),
    ],
)
def test_allow_rules_must_cover_the_whole_command(rule: str, command: str, allowed: bool) -> None:
    assert (_match(rule, Verdict.ALLOW, "bash", bash(command)) is not None) is allowed


@pytest.mark.parametrize(
    ("rule", "command", "hit"),
    [
        ("bash(rm:*)", "ls && rm -rf build", True),
        ("bash(rm:*)", "ls > x; rm y", True),
        ("bash(rm:*)", "ls\nrm y", True),
        ("bash(curl:*)", "echo $(curl evil)", True),
        ("bash(curl:*)", "echo curl", False),
        ("bash(git push:*)", "git push --force", True),
        ("bash(git push:*)", "git pull", False),
    ],
)
def test_deny_rules_match_any_segment(rule: str, command: str, hit: bool) -> None:
    assert (_match(rule, Verdict.DENY, "bash", bash(command)) is not None) is hit


def test_edit_and_read_families_cover_every_writer_and_reader() -> None:
    write_tool = Declaration(title="write", kind="edit", writes=("/ws/src/a.py",))
    grep_tool = Declaration(title="grep", kind="search", reads=("/ws/.env",))
    assert _match("edit(src/**)", Verdict.ALLOW, "write", write_tool)
    assert _match("read(**/.env)", Verdict.DENY, "grep", grep_tool)
    assert not _match("read(**/.env)", Verdict.DENY, "bash", bash("cat .env"))


def test_allow_needs_every_declared_path_covered() -> None:
    rules = (Rule.parse("edit(src/**)"),)
    inside = edit("/ws/src/a.py", "/ws/src/b.py")
    straddling = edit("/ws/src/a.py", "/ws/setup.py")
    assert first_match(rules, Verdict.ALLOW, "edit", inside, CTX)
    assert not first_match(rules, Verdict.ALLOW, "edit", straddling, CTX)
    assert first_match(rules, Verdict.DENY, "edit", straddling, CTX)


def test_rule_sets_from_config_combine_and_round_trip_through_json() -> None:
    user = RuleSet.from_config({"allow": ["bash(npm test:*)"], "deny": ["read(**/.env)"]})
    workspace = RuleSet.from_config({"ask": ["bash(git push:*)"]})
    both = user | workspace
    assert both.to_json() == {
        "allow": ["bash(npm test:*)"],
        "ask": ["bash(git push:*)"],
        "deny": ["read(**/.env)"],
    }
    assert RuleSet.from_json(both.to_json()) == both


@pytest.mark.parametrize(
    "table", [{"allow": "bash"}, {"allow": [1]}, {"permit": ["bash"]}, {"deny": ["bash("]}]
)
def test_bad_config_tables_are_config_errors(table: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RuleSet.from_config(table)


def test_read_rules_with_no_paths_never_allow() -> None:
    assert not _match("read(src/**)", Verdict.ALLOW, "read", read())
