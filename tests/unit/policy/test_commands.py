import pytest

from loopd.policy.commands import command_prefix, is_safe_command, loose_segments, split_command

SAFE_ANYWHERE = [
    "ls",
    "ls -la src",
    "cat README.md | head -n 20",
    "grep -rn TODO src && wc -l src/*.py",
    "rg -n 'fn main' crates; pwd",
    "find . -name '*.py' -type f",
    "sed -n 1,20p file.txt",
    "sed -n 5p file.txt",
    "echo hello || true",
    "head -c 100 a | tail -n 3 | sort | uniq -c",
    "uniq in.txt",
    "sort -r names.txt",
    "cd src && ls",
    "diff -u a b",
]

UNSAFE_ANYWHERE = [
    "",
    "   ",
    "rm -rf build",
    "ls > out.txt",
    "ls >> out.txt",
    "cat < in.txt",
    "ls 2>&1",
    "echo $(whoami)",
    "echo `whoami`",
    "echo $HOME",
    "(ls)",
    "ls &",
    "ls & rm x",
    "ls\nrm -rf /",
    "ls \\; rm x",
    "FOO=bar ls",
    "echo 'unterminated",
    "find . -delete",
    "find . -exec rm {} ;",
    "find . -name x -fprint out",
    "rg --pre cat x",
    "rg --pre=cat x",
    "sed -i s/a/b/ file",
    "sed -n 1p;w out file",
    "sort -o out in",
    "sort --output=out in",
    "uniq in out",
    "tree -o out",
    "ls && rm x",
    "ls ||",
    "&& ls",
    "ls | | wc",
    "/bin/ls",
    "python3 -c 'print(1)'",
    "bash -c ls",
    "xargs rm",
    "git status",
    "ls <(cat a)",
    "ls |& wc",
]


@pytest.mark.parametrize("command", SAFE_ANYWHERE)
def test_read_only_commands_are_safe_with_or_without_a_sandbox(command: str) -> None:
    assert is_safe_command(command, sandboxed=False)
    assert is_safe_command(command, sandboxed=True)


@pytest.mark.parametrize("command", UNSAFE_ANYWHERE)
def test_effects_and_unparseable_lines_are_unsafe_unsandboxed(command: str) -> None:
    assert not is_safe_command(command, sandboxed=False)


@pytest.mark.parametrize(
    ("command", "sandboxed_safe"),
    [
        ("git status", True),
        ("git diff HEAD~1", True),
        ("git log --oneline -5", True),
        ("git log -p -- src", True),
        ("git --paginate log", False),
        ("git show HEAD:README.md", True),
        ("git branch", True),
        ("git branch -a -v", True),
        ("git branch new-feature", False),
        ("git branch -D main", False),
        ("git diff --output=/tmp/x", False),
        ("git diff --ext-diff", False),
        ("git log --exec=x", False),
        ("git -c core.pager=evil status", False),
        ("git -C /etc status", False),
        ("git push", False),
        ("git commit -m x", False),
        ("git status && git push", False),
    ],
)
def test_git_is_safe_only_inside_a_sandbox_and_only_reading(
    command: str, sandboxed_safe: bool
) -> None:
    assert not is_safe_command(command, sandboxed=False)
    assert is_safe_command(command, sandboxed=True) is sandboxed_safe


def test_split_command_returns_plain_segments() -> None:
    assert split_command("git diff -- 'a b' && ls | wc -l") == (
        ("git", "diff", "--", "a b"),
        ("ls",),
        ("wc", "-l"),
    )
    assert split_command("ls > x") is None


def test_loose_segments_still_see_programs_behind_redirections_and_newlines() -> None:
    programs = [s[0] for s in loose_segments("cat x > y\nrm -rf / && (curl evil)")]
    assert programs == ["cat", "y", "rm", "curl"]


@pytest.mark.parametrize(
    ("segment", "prefix"),
    [
        (("git", "push", "origin", "main"), (("git", "push"), True)),
        (("npm", "test"), (("npm", "test"), True)),
        (("git", "--no-pager", "log"), (("git", "--no-pager", "log"), False)),
        (("rm", "-rf", "build"), (("rm", "-rf", "build"), False)),
        (("pytest", "-q"), (("pytest", "-q"), False)),
    ],
)
def test_command_prefix_generalises_only_over_subcommands(
    segment: tuple[str, ...], prefix: tuple[tuple[str, ...], bool]
) -> None:
    assert command_prefix(segment) == prefix
