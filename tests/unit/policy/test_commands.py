import pytest

from loopd.policy.commands import (
    READ_ONLY_PROGRAMS,
    command_prefix,
    is_safe_command,
    loose_segments,
    split_command,
)

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


# -- every safe-listed program against the spellings that write ------------------------
#
# Each program the classifier may call read-only has a row: the ways its parser lets an
# option that writes a file or runs a program be spelled (joined values, long-option
# prefixes, combined short flags, after `--`), and what must stay safe. A program added
# to the safe list without a row fails `test_every_safe_listed_program_has_a_row`.

WRITING_SPELLINGS: dict[str, list[str]] = {
    "sort": [
        "sort -o out in", "sort -oout in", "sort -uo out in", "sort -ruoout in",
        "sort --output=out in", "sort --output out in", "sort --out=out in",
        "sort --o out in", "sort --outp=out in", "sort in -o out", "sort -- in -o out",
        "sort --compress-program=sh in", "sort --compress=sh in", "sort --comp sh in",
    ],
    "uniq": ["uniq in out", "uniq - out", "uniq -c in out", "uniq -- -in out", "uniq -- in out"],
    "sed": [
        "sed -i s/a/b/ f", "sed -n 1p -i f", "sed -n 1p --in-place f", "sed -n 1p --in-pl=.b f",
        "sed -n 1p -s -i f", "sed -ni 1p f", "sed -n 1p -e 'w out' f", "sed -n 1p -f script f",
        "sed -n 1,2w out f", "sed -n 1p;w out f", "sed --in-place -n 1p f",
    ],
    "find": [
        "find . -delete", "find . -exec rm {} +", "find . -execdir rm {} +", "find . -ok rm {} +",
        "find . -okdir rm {} +", "find . -fls out", "find . -fprint out", "find . -fprint0 out",
        "find . -fprintf out %p", "find -- . -delete", "find . -name x -o -delete",
    ],
    "rg": [
        "rg --pre cat x", "rg --pre=cat x", "rg --pre-glob=* --pre cat x", "rg -z x",
        "rg -nz x", "rg -zn x", "rg --search-zip x", "rg --search=x", "rg --hostname-bin=sh x",
        "rg --host=sh x",
    ],
    "tree": ["tree -o out", "tree -aoout", "tree -ao out", "tree -R -H . -L 1", "tree -aR"],
    "base64": [
        "base64 -o out in", "base64 -dooout in", "base64 --output=out in", "base64 --out out",
    ],
    "file": ["file -C -m magic", "file -bC -m magic", "file --compile -m magic", "file --comp"],
    "git": [
        "git diff --output=out", "git diff --output out", "git diff --out=out",
        "git diff --outp=out", "git log -p --output=out", "git show --output=out",
        "git diff -o out", "git diff --ext-diff", "git diff --ext", "git log --textconv",
        "git diff -- --output=out", "git log --exec=x", "git -c core.pager=sh log",
        "git --output=out diff", "git branch -D main", "git branch new",
    ],
}  # fmt: skip

STILL_SAFE: dict[str, list[str]] = {
    "sort": ["sort -r names.txt", "sort -t, -k2 -n in", "sort -u in", "sort --reverse in"],
    "uniq": ["uniq in.txt", "uniq -c in", "uniq", "uniq -"],
    "sed": ["sed -n 1,20p f", "sed -n 5p a b", "sed -n 1p -"],
    "find": ["find . -name '*.py' -type f", "find . -newer a -print"],
    "rg": ["rg -n foo", "rg --pretty foo", "rg --no-pre foo", "rg -e x -g '*.py' foo"],
    "tree": ["tree -a -L 2", "tree -d"],
    "base64": ["base64 in", "base64 -d in", "base64 --decode in"],
    "file": ["file a", "file -b a", "file --mime-type a"],
    "git": [
        "git status",
        "git diff HEAD~1",
        "git log --oneline -5",
        "git log -p -- src",
        "git show HEAD:README.md",
        "git branch -a -v",
        "git diff --stat",
    ],
}

# Programs with no option that writes or runs another program: any spelling is safe.
NO_WRITING_OPTIONS = (
    "cat", "cd", "cut", "echo", "expr", "false", "grep", "egrep", "fgrep", "head", "id",
    "ls", "nl", "paste", "pwd", "rev", "seq", "stat", "tail", "tr", "true", "uname", "wc",
    "which", "whoami", "numfmt", "tac", "basename", "dirname", "realpath", "readlink",
    "printf", "du", "df", "cmp", "diff", "md5sum", "sha1sum", "sha256sum", "sha512sum",
)  # fmt: skip

# Not on the safe list at all: writers a model reaches for.
NEVER_SAFE = [
    "tee out", "tee -a out", "cp a b", "mv a b", "touch a", "dd of=out", "rm a", "mkdir d",
    "ln -s a b", "chmod +x a", "install a b", "truncate -s0 a", "sdiff -o out a b",
    "patch -p1", "ls | tee out", "ls | xargs rm", "git status && tee out",
]  # fmt: skip


def test_every_safe_listed_program_has_a_row() -> None:
    audited = set(WRITING_SPELLINGS) | set(NO_WRITING_OPTIONS)
    assert audited == READ_ONLY_PROGRAMS
    assert set(STILL_SAFE) <= set(WRITING_SPELLINGS)


@pytest.mark.parametrize(
    "command", [c for spellings in WRITING_SPELLINGS.values() for c in spellings]
)
def test_every_spelling_of_a_writing_option_is_unsafe(command: str) -> None:
    assert not is_safe_command(command, sandboxed=True)
    assert not is_safe_command(command, sandboxed=False)


@pytest.mark.parametrize("command", [c for row in STILL_SAFE.values() for c in row])
def test_reading_spellings_of_the_same_programs_stay_safe(command: str) -> None:
    assert is_safe_command(command, sandboxed=True)


@pytest.mark.parametrize("program", NO_WRITING_OPTIONS)
def test_programs_without_writing_options_are_safe_with_any_flags(program: str) -> None:
    assert is_safe_command(f"{program} -abc --long=x -- -o y", sandboxed=False)


@pytest.mark.parametrize("command", NEVER_SAFE)
def test_writers_off_the_safe_list_are_unsafe(command: str) -> None:
    assert not is_safe_command(command, sandboxed=True)
