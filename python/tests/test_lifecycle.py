"""Kokkos' lifetime: uq initialises it on import and finalises it at exit, after releasing the
views of the objects still alive then (module globals outlive atexit hooks; a Kokkos view freed
after finalize would abort the process); objects used after that refuse with uq.Error. Each case
runs in a fresh interpreter."""

import os
import subprocess
import sys
import textwrap


def run_python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


def test_objects_alive_at_exit_are_released_before_kokkos_is_finalised():
    r = run_python("""
        import numpy as np, uq
        plan = uq.DecodePlan(4, 1, 6, 64, 10)                       # owns a workspace view
        ws = np.zeros(uq.DecodePlan.workspace_bytes(2, 1, 8, 16, 5) + 16, np.uint8)
        start = (-ws.ctypes.data) % 16
        owned = uq.DecodePlan(2, 1, 8, 16, 5, workspace=ws[start:])  # holds the caller's memory
        writers = [uq.KvWriter(), uq.IndexKeyWriter(), uq.ScorePlan(2, 1, 4), uq.BlockSelector()]
        print("ok", plan.status().ok)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok True"
    assert "Kokkos" not in r.stderr, r.stderr  # no warnings of views freed after finalize


def test_use_after_finalize_is_an_error():
    r = run_python("""
        import uq
        plan = uq.DecodePlan(4, 1, 6, 64, 10)
        uq._uq._finalize()   # what the atexit hook does
        try:
            plan.status()
        except uq.Error as e:
            print(e.argument, "|", e.actual)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(module state) | Kokkos already finalised at interpreter exit"


def test_build_facts():
    r = run_python("""
        import uq
        s = uq.execution_spaces()
        print(s["host"] in ("Serial", "OpenMP"), s["default"], uq.__version__)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("True ")
