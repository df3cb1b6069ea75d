#!/usr/bin/env python3
"""Regenerate every vector file in the parent directory, then run the checker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["extract_mlkem.py", "extract_xwing.py", "extract_hkdf.py", "extract_aes_gcm.py",
           "extract_hpke.py"]

for s in SCRIPTS:
    subprocess.run([sys.executable, str(HERE / s)], check=True, cwd=HERE)
subprocess.run([sys.executable, str(HERE.parent / "check_vectors.py")], check=True,
               cwd=HERE.parent)
