"""Process exit for scripts that use apache-iggy.

apache-iggy 0.9.0 (pyo3 over the Rust SDK and its tokio runtime) sometimes
aborts the interpreter while it finalises (SIGABRT, no Python frame, exit
134) when the machine is loaded: seen in 3 of 19 runs of fidelity.py beside
three busy-looping processes, after every check had passed, and in a CI run.
The scripts' results are their output and exit code, so they flush and leave
without finalising.
"""

import os
import sys


def hard_exit(code):
    """Flush stdout and stderr, then exit with code, skipping finalisation."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
