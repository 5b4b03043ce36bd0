"""Test-session setup shared by every test and notebook run.

Issue 15: ``roofline measure --save`` adds the learner's own GPU rows (from the user data directory) to
``rl.gpus()``. Tests and nbval notebooks must see only the project's tables, whatever the person running
them saved, so the whole session (and every kernel it starts: they inherit the environment) points
``SPEED_PHYSICS_HOME`` at an empty temporary directory. Tests of the user table set their own.
"""

import atexit
import os
import shutil
import tempfile

os.environ["SPEED_PHYSICS_HOME"] = tempfile.mkdtemp(prefix="speed-physics-test-home-")
atexit.register(shutil.rmtree, os.environ["SPEED_PHYSICS_HOME"], ignore_errors=True)  # leave no folder behind

# Hypothesis: one named profile. CI (and anyone who wants repeatable runs) gets "ci": derandomized, so a
# failure found once is found on every run, with no per-example deadline on a shared 2-core machine.
# HYPOTHESIS_PROFILE=dev explores new random examples locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
