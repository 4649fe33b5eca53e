"""What may run without asking: modes, rules, the safe-command classifier, the path
policy and the per-call grants. Pure decisions (mypy strict); the sandbox contains
what the policy lets run."""
