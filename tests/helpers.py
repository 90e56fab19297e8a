"""Shared helpers for the mydev tests."""
import os
import subprocess
import sys
import textwrap


def run_python(code, env=None, timeout=120):
    """Runs `code` in a fresh interpreter (for process-wide settings: env vars, faults, fork)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
