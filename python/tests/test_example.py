"""The README's NumPy example (python/example.py) runs and agrees with exact attention."""

import os
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "example.py")


def test_example_runs():
    r = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and all("cosine(uq, exact) = 0.9" in line for line in lines), r.stdout
