#!/usr/bin/env python3
"""Runs the mutants gremlins could not judge through another package's tests.

gremlins runs a package's own tests only, so a mutant in pkg/replay that only pkg/admit's
conformance reaches is "not covered" there. This applies each NOT COVERED mutant of a gremlins
log (`make mutate` keeps it as <package>.log), in files matching FILES, to a copy of the tree,
one at a time, and runs TEST there (default: the admission conformance). Prints each verdict and
the efficacy.

  hack/mutate-through.py /tmp/nodestate-mutate.X/replay.log pkg/replay 'cpu_assignment|cpu_manager'

The log may also be a dry run's (`gremlins unleash --dry-run ./pkg/replay`), which lists the same
NOT COVERED mutants in seconds. TEST defaults to the tests that replay the kubelet: the admission
conformance, doctor's start conformance and replay's own. A mutant whose test run outlives
TIMEOUT seconds (default 120; a loop that no longer ends) counts as killed, as gremlins counts
a time-out.
"""
import os, re, shutil, signal, subprocess, sys, tempfile

SWAP = {
    "CONDITIONALS_BOUNDARY": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
    "CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"},
    "ARITHMETIC_BASE": {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
    "INCREMENT_DECREMENT": {"++": "--", "--": "++"},
    "INVERT_NEGATIVES": {"-": ""},
}

def main():
    log, pkgdir, files = sys.argv[1], sys.argv[2], sys.argv[3]
    test = os.environ.get("TEST", "go test -count=1 -failfast -timeout 5m ./pkg/admit ./pkg/doctor ./pkg/replay")
    timeout = float(os.environ.get("TIMEOUT", "120"))
    repo = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    mutants = []
    for line in open(log):
        m = re.match(r"\s*NOT COVERED (\w+) at (\S+):(\d+):(\d+)", line)
        if m and re.search(files, m.group(2)):
            mutants.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    work = tempfile.mkdtemp(prefix="nodestate-through.")
    tree = os.path.join(work, "tree")
    listing = subprocess.check_output(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=repo, text=True)
    for f in listing.splitlines():
        dst = os.path.join(tree, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(repo, f), dst)
    killed = lived = 0
    try:
        for kind, name, ln, col in mutants:
            path = os.path.join(tree, pkgdir, name)
            orig = open(path).read()
            lines = orig.split("\n")
            s = lines[ln - 1]
            i = col - 1
            op = next((o for o in sorted(SWAP[kind], key=len, reverse=True) if s.startswith(o, i)), None)
            if op is None:
                print(f"NOT APPLIED {kind} at {name}:{ln}:{col}: {s.strip()}")
                continue
            lines[ln - 1] = s[:i] + SWAP[kind][op] + s[i + len(op):]
            open(path, "w").write("\n".join(lines))
            try:
                # A new session, so that a time-out stops the whole test run, not the shell only.
                run = subprocess.Popen(test, shell=True, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
                ok, verdict = run.wait(timeout=timeout) == 0, None
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
                ok, verdict = False, "TIMEOUT"
            open(path, "w").write(orig)
            verdict = verdict or ("LIVED" if ok else "KILLED")
            lived, killed = lived + ok, killed + (not ok)
            print(f"{verdict:>7} {kind} at {name}:{ln}:{col}: {lines[ln-1].strip()}", flush=True)
    finally:
        shutil.rmtree(work)
    total = killed + lived
    print(f"killed {killed}, lived {lived}, efficacy {100.0 * killed / total if total else 0:.2f}%")

main()
