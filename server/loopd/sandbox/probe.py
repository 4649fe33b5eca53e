"""Which sandbox tiers work on this machine, found once at startup, and the choice.

Reading versions or kernel config is not enough (containers forbid mounts, seccomp
hides syscalls, user namespaces may be capped), so `probe_sandbox` runs `true` through
each tier exactly as a command would run, and keeps what worked. For bubblewrap it also
finds which hardening flags this build and kernel accept, strongest first. The result
is a report for `loopd doctor` and session info, and the input to `select_sandbox`;
give `probe.best` to `RulePolicy` as its tier so the policy only auto-allows what the
chosen sandbox really contains.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from loopd.executables import find_program
from loopd.home import home_path
from loopd.policy.domains import DomainLists
from loopd.policy.modes import Mode, SandboxMode
from loopd.policy.network import NetworkGrant
from loopd.policy.tiers import TIER_ORDER, Tier
from loopd.sandbox.base import CommandSandbox, CommandSpec, Unsandboxed
from loopd.sandbox.bwrap import BwrapFeatures, BwrapSandbox
from loopd.sandbox.landlock import LandlockSandbox, abi_version
from loopd.sandbox.netns import NetnsSandbox

log = logging.getLogger(__name__)

# Strongest first; the first variant that runs is the one used.
BWRAP_VARIANTS = (
    BwrapFeatures(unshare_user=True, disable_userns=True, proc=True),
    BwrapFeatures(unshare_user=True, disable_userns=False, proc=True),
    BwrapFeatures(unshare_user=False, disable_userns=False, proc=True),
    BwrapFeatures(unshare_user=False, disable_userns=False, proc=False),
)


@dataclass(frozen=True, slots=True)
class TierReport:
    tier: Tier
    available: bool
    detail: str


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    reports: tuple[TierReport, ...]
    bwrap_path: str | None = None
    bwrap_features: BwrapFeatures | None = None
    landlock_abi: int = 0

    def available(self, tier: Tier) -> bool:
        return tier is Tier.NONE or any(r.tier is tier and r.available for r in self.reports)

    @property
    def best(self) -> Tier:
        return next(t for t in TIER_ORDER if self.available(t))

    def report(self) -> str:
        """Lines for `loopd doctor`: the chosen tier, then every tier probed."""
        lines = [f"sandbox: {self.best}"]
        for r in self.reports:
            lines.append(f"  {r.tier:<15} {'ok' if r.available else 'unavailable'}: {r.detail}")
        return "\n".join(lines)


def probe_sandbox(
    which: Iterable[Tier] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    bwrap: str | None = None,
    timeout: float = 10.0,
) -> SandboxProbe:
    """Probe `which` tiers (default: all). Forcing a lower tier in tests is
    `probe_sandbox(which=[Tier.LANDLOCK])`; `none` is always available."""
    wanted = set(TIER_ORDER if which is None else which)
    base_env = dict(os.environ if env is None else env)
    reports: list[TierReport] = []
    bwrap_path = bwrap or find_program("bwrap", base_env.get("PATH"))
    features: BwrapFeatures | None = None
    abi = abi_version()
    with tempfile.TemporaryDirectory(prefix="loopd-probe-") as scratch:
        root = os.path.realpath(scratch)
        if wanted & {Tier.BWRAP, Tier.BWRAP_LANDLOCK}:
            features, detail = _probe_bwrap(bwrap_path, base_env, root, timeout)
            if Tier.BWRAP_LANDLOCK in wanted:
                reports.append(_probe_stack(bwrap_path, features, abi, base_env, root, timeout))
            if Tier.BWRAP in wanted:
                reports.append(TierReport(Tier.BWRAP, features is not None, detail))
        if Tier.LANDLOCK in wanted:
            reports.append(_probe_landlock(abi, base_env, root, timeout))
        if Tier.NETNS in wanted:
            sandbox = NetnsSandbox(base_env, NetworkGrant())
            reports.append(_run_probe(Tier.NETNS, sandbox, root, timeout, "unshare --net --pid"))
    reports.append(TierReport(Tier.NONE, True, "commands run as they are; non-safe ones ask"))
    probe = SandboxProbe(tuple(reports), bwrap_path, features, abi)
    log.info("sandbox probe: %s", probe.best)
    return probe


def _probe_bwrap(
    path: str | None, env: Mapping[str, str], root: str, timeout: float
) -> tuple[BwrapFeatures | None, str]:
    if path is None:
        return None, "bwrap not found (install the bubblewrap package)"
    last = ""
    for variant in BWRAP_VARIANTS:
        sandbox = BwrapSandbox(env, (root,), NetworkGrant(), root, bwrap=path, features=variant)
        report = _run_probe(Tier.BWRAP, sandbox, root, timeout, "")
        if report.available:
            return variant, _describe(variant)
        last = report.detail
    return None, f"bwrap failed: {last}"


def _describe(f: BwrapFeatures) -> str:
    parts = ["read-only root", "home and neighbours hidden", "pid+net namespaces"]
    parts.append("user namespace" if f.unshare_user else "user namespace if possible")
    parts += ["nested user namespaces disabled"] if f.disable_userns else []
    parts += [] if f.proc else ["no /proc"]
    return ", ".join(parts)


def _probe_stack(
    path: str | None,
    features: BwrapFeatures | None,
    abi: int,
    env: Mapping[str, str],
    root: str,
    timeout: float,
) -> TierReport:
    if path is None or features is None or abi < 1:
        why = "needs both bwrap and Landlock" if abi >= 1 else "Landlock missing"
        return TierReport(Tier.BWRAP_LANDLOCK, False, why)
    sandbox = BwrapSandbox(
        env, (root,), NetworkGrant(), root, bwrap=path, features=features, landlock=True
    )
    return _run_probe(
        Tier.BWRAP_LANDLOCK, sandbox, root, timeout, f"Landlock ABI {abi} inside bwrap"
    )


def _probe_landlock(abi: int, env: Mapping[str, str], root: str, timeout: float) -> TierReport:
    if abi < 1:
        return TierReport(Tier.LANDLOCK, False, "Landlock is not enabled in this kernel")
    sandbox = LandlockSandbox(env, (root,), NetworkGrant())
    net = "fs + TCP rules" if abi >= 4 else "fs rules only (no TCP rules before ABI 4)"
    return _run_probe(Tier.LANDLOCK, sandbox, root, timeout, f"ABI {abi}, {net}")


def _run_probe(
    tier: Tier, sandbox: CommandSandbox, root: str, timeout: float, ok: str
) -> TierReport:
    prepared = sandbox.prepare(CommandSpec(("true",), root, (root,)))
    try:
        done = subprocess.run(
            prepared.argv,
            env=dict(prepared.env),
            cwd=prepared.cwd,
            preexec_fn=prepared.preexec,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return TierReport(tier, False, str(exc))
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        return TierReport(tier, False, message[-1] if message else f"exit {done.returncode}")
    return TierReport(tier, True, ok)


def select_sandbox(
    mode: Mode | SandboxMode,
    probe: SandboxProbe,
    roots: Sequence[str],
    network_grant: NetworkGrant,
    env: Mapping[str, str],
    *,
    home: str | None = None,
    extra_secrets: Sequence[str] = (),
    home_readable: Sequence[str] = (),
    unix_sockets: Sequence[str] = (),
) -> CommandSandbox:
    """The sandbox for a session: the probe's best tier, configured for the mode
    (plan mounts the roots read-only; full access runs commands unsandboxed). `env` is
    only a source: each tier builds the command's environment from scratch. The home
    hidden is `home`, else `env`'s (the editor's, never this process's)."""
    sandbox_mode = mode.sandbox if isinstance(mode, Mode) else mode
    if sandbox_mode is SandboxMode.FULL_ACCESS:
        return Unsandboxed(dict(env))
    read_only = sandbox_mode is SandboxMode.READ_ONLY
    canonical = tuple(os.path.realpath(r) for r in roots)
    best = probe.best
    match best:
        case Tier.BWRAP | Tier.BWRAP_LANDLOCK:
            return BwrapSandbox(
                dict(env),
                canonical,
                network_grant,
                os.path.realpath(home or home_path(env)),
                read_only=read_only,
                bwrap=probe.bwrap_path or "bwrap",
                features=probe.bwrap_features or BwrapFeatures(),
                landlock=best is Tier.BWRAP_LANDLOCK,
                extra_secrets=tuple(extra_secrets),
                home_readable=tuple(home_readable),
                unix_sockets=tuple(unix_sockets),
            )
        case Tier.LANDLOCK:
            return LandlockSandbox(
                dict(env),
                canonical,
                network_grant,
                read_only=read_only,
                unix_sockets=tuple(unix_sockets),
            )
        case Tier.NETNS:
            return NetnsSandbox(dict(env), network_grant)
        case Tier.NONE:
            return Unsandboxed(dict(env))


@dataclass(frozen=True, slots=True)
class Boundary:
    """What a session's sandbox hides and lets through beyond its defaults: loopd's
    own folders (`private`), home entries shown to commands, Unix sockets allowed,
    and the domain lists of network by domain (None: not configured)."""

    private: tuple[str, ...] = ()
    home_readable: tuple[str, ...] = ()
    unix_sockets: tuple[str, ...] = ()
    domains: DomainLists | None = None

    def sandbox(
        self,
        mode: Mode | SandboxMode,
        probe: SandboxProbe,
        roots: tuple[str, ...],
        grant: NetworkGrant,
        env: Mapping[str, str],
    ) -> CommandSandbox:
        return select_sandbox(
            mode,
            probe,
            roots,
            grant,
            env,
            extra_secrets=self.private,
            home_readable=self.home_readable,
            unix_sockets=self.unix_sockets,
        )


NO_BOUNDARY = Boundary()
