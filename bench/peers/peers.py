"""The peer tuners' side of bench/bench.py: their virtual environment and
their drivers (bench/peers/*_peer.py, run with the environment's Python).

bench.py runs with Debian's /usr/bin/python3; the peers need packages of
their own (feinsum 2025.3 with loopy, islpy and pyopencl; kernel_tuner
1.5.0; tinygrad), pinned in bench/peers/requirements.txt. They go into
build/bench/peers-venv, made once with a Python >= 3.12 (feinsum 2025.3
requires it; Debian 12 has 3.11, so the first of python3.12, python3.13 on
PATH or under ~/.pyenv/versions) and made again only when the
requirements file changes (its SHA-256 is kept in the environment).
Whatever fails here is a reason, never an exception: every peer is then
reported as not run, with that reason.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REQS = os.path.join(HERE, "requirements.txt")


def _python_candidates():
    # 3.12 first: the pins were resolved with it
    names = ["python3.12", "python3.13"]
    out = [shutil.which(n) for n in names]
    home = os.path.expanduser("~")
    for pat in ("3.12*", "3.13*"):
        out += sorted(glob.glob(os.path.join(home, ".pyenv", "versions", pat,
                                             "bin", "python3")),
                      reverse=True)
    out.append(shutil.which("python3"))
    return [p for p in out if p]


def _version_ok(py):
    try:
        p = subprocess.run([py, "-c", "import sys, venv; "
                            "print(sys.version_info >= (3, 12))"],
                           capture_output=True, text=True, timeout=60)
        return p.returncode == 0 and p.stdout.strip() == "True"
    except (OSError, subprocess.SubprocessError):
        return False


def ensure_venv(build_dir, log):
    """(python of the environment, None) or (None, why it cannot be
    made)."""
    venv = os.path.join(build_dir, "peers-venv")
    py = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, "requirements.sha256")
    with open(REQS, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    try:
        with open(stamp) as f:
            if f.read().strip() == digest and os.path.exists(py):
                return py, None
    except OSError:
        pass
    base = next((p for p in _python_candidates() if _version_ok(p)), None)
    if base is None:
        return None, ("no Python >= 3.12 with venv found (python3.12, "
                      "python3.13, ~/.pyenv/versions/3.1[23]*): feinsum "
                      "2025.3 and the pinned set need it")
    log("peers: making %s with %s (bench/peers/requirements.txt)" % (
        venv, base))
    shutil.rmtree(venv, ignore_errors=True)
    logf = os.path.join(build_dir, "peers-venv.log")
    with open(logf, "w") as lf:
        for cmd in ([base, "-m", "venv", venv],
                    [py, "-m", "pip", "install", "--disable-pip-version-check",
                     "-q", "-r", REQS]):
            try:
                rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                    timeout=1800).returncode
            except (OSError, subprocess.SubprocessError) as e:
                rc = str(e)
            if rc != 0:
                with open(logf) as f:
                    tail = (f.read().strip().splitlines() or [""])[-1]
                return None, ("making the peers' environment failed (%s: "
                              "exit %s): %s; log: %s" % (
                                  os.path.basename(cmd[2] if cmd[1] == "-m"
                                                   and cmd[2] == "venv"
                                                   else "pip install"),
                                  rc, tail, logf))
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return py, None


def run_driver(py, script, args, timeout, env=None):
    """Runs bench/peers/SCRIPT with the environment's Python. Returns
    (doc, None) on success, (None, dict(not_run=WHY)) when the peer cannot
    run here (exit 3) and (None, dict(error=WHY)) when it failed."""
    cmd = [py, os.path.join(HERE, script)] + [str(a) for a in args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, dict(error="%s timed out after %d s" % (script, timeout))
    except OSError as e:
        return None, dict(error="%s could not start: %s" % (script, e))
    try:
        doc = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        doc = None
    if p.returncode == 3 and doc and doc.get("not_run"):
        return None, dict(not_run=doc["not_run"])
    if p.returncode != 0 or doc is None or doc.get("error"):
        tail = (p.stderr.strip().splitlines() or [""])[-1]
        why = (doc or {}).get("error") or "exit %d: %s" % (p.returncode,
                                                            tail[-300:])
        return None, dict(error=why, partial=doc)
    return doc, None
