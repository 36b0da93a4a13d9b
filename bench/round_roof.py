"""The device's peaks measured again right before a bench's timed runs,
into a database those runs then use (`eintune run ... --time --db F`
takes its roofline from the peaks F keeps), with a cache directory of its
own so the user's cached figures stay as they are.

Why: this host's DRAM bandwidth moves by 1.5-2x within minutes (a read
kernel 33-53 GB/s within one 10 s measurement, 31 and 75 GB/s an hour
apart), so against a roof measured only at a run's start a memory-bound
kernel's % of roofline measures the host's drift more than the kernel
(bench/README.md, "roofline and % of roofline"). Used by bench.py (each
round of a memory-bound case) and batched.py (each row's runs).
"""
import json
import os
import shutil
import subprocess


def measure(binary, device, tmp, log, tuning_db=None):
    """Runs `eintune peaks --remeasure --runs 3` on opencl:device into
    tmp/round-roof.db (a copy of tuning_db first, when given, so that
    `--best` finds its kernels there). Returns (database, {read_gbs,
    copy_gbs}); where the measurement failed, (the copy or None, None)."""
    db = os.path.join(tmp, "round-roof.db")
    if tuning_db:
        shutil.copyfile(tuning_db, db)
    elif os.path.exists(db):
        os.remove(db)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "round-cache"))
    p = subprocess.run([binary, "peaks", "--remeasure", "--runs", "3", "--db",
                        db, "--json", "-", "--device", "opencl:" + device],
                       capture_output=True, text=True, env=env, timeout=600)
    try:
        doc = json.loads(p.stdout) if p.returncode == 0 else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("error"):
        why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])
        log("  peaks measured again: failed (%s); the stored ones" % why[-1])
        return (db if tuning_db else None), None
    bw = doc.get("bandwidth") or {}
    fig = dict(read_gbs=(bw.get("read") or {}).get("gbs"),
               copy_gbs=(bw.get("copy") or {}).get("gbs"))
    log("  peaks measured again: DRAM read %.1f, copy %.1f GB/s" % (
        fig["read_gbs"] or 0, fig["copy_gbs"] or 0))
    return db, fig
