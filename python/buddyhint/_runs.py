"""Replays through the installed buddyhint command, and its output files as DataFrames."""
import io
import json
import os
import shutil
import subprocess
import tempfile

from ._arena import BuddyhintError, _pd, prefix


def _command():
    """The buddyhint command: BUDDYHINT, else PREFIX/bin/buddyhint of prefix() (the
    BUDDYHINT_PREFIX environment variable, or where `make install` put this package), else
    the one on PATH."""
    cmd = os.environ.get("BUDDYHINT")
    pre = prefix()
    if not cmd and pre and os.access(os.path.join(pre, "bin", "buddyhint"), os.X_OK):
        cmd = os.path.join(pre, "bin", "buddyhint")
    cmd = cmd or shutil.which("buddyhint")
    if not cmd:
        raise BuddyhintError("the buddyhint command is not installed (make install), or set "
                             "BUDDYHINT_PREFIX to its install prefix (or BUDDYHINT to its path)")
    return cmd


def _value(key, v):
    """An option's value as an argument: a string, number or path, never one that the
    command would read as an option or that holds a NUL."""
    if isinstance(v, bool) or not isinstance(v, (str, bytes, os.PathLike, int, float)):
        raise BuddyhintError("option %s: %r is not a string, number or path" % (key, v))
    text = os.fsdecode(v) if isinstance(v, (bytes, os.PathLike)) else str(v)
    if "\0" in text:
        raise BuddyhintError("option %s: a value with a NUL byte" % key)
    return text


def _options(options):
    """Keyword options as command-line options: backing="sim" -> --backing sim; True -> a
    flag; False and None -> left out; a list -> the option once per item."""
    args = []
    for key, value in options.items():
        if not key.replace("_", "").isalnum():
            raise BuddyhintError("%r is not an option name" % key)
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, _value(key, v)]
        else:
            args += [flag, _value(key, value)]
    return args


def _violations(doc):
    runs = doc.get("runs") if isinstance(doc, dict) and "runs" in doc else [doc]
    return sum(r.get("check_violations", 0) for r in runs if isinstance(r, dict))


def _run(args):
    p = subprocess.run([_command()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, check=False)
    fail = "buddyhint %s failed (exit %d): %s" % (args[0], p.returncode, p.stderr.strip())
    if p.returncode not in (0, 1) or not p.stdout.strip():
        raise BuddyhintError(fail)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        raise BuddyhintError(fail) from None
    # exit 1 is also a run whose checker found violations, which its JSON says; any other
    # exit 1 (an output it could not write, a damaged trace) is a failure
    if p.returncode == 1 and not _violations(doc):
        raise BuddyhintError(fail)
    return doc


def replay(trace, strategy="none", opts=None, **options):
    """One replay of trace with a strategy: the run as a dict (replay --json).

    opts are the strategy's options ({"order": 3} -> --opt order=3); every other keyword is a
    replay option (backing="sim", memory="2G", seed=7, idle=10, no_pcp=True).
    """
    args = ["replay", os.fspath(trace), "--strategy", strategy, "--json", "-", "--quiet"]
    for k, v in (opts or {}).items():
        args += ["--opt", "%s=%s" % (k, v)]
    return _run(args + _options(options))


def compare(trace, strategies=("none", "bitmap", "bubble"), timeline=False, **options):
    """The trace once per strategy ("bubble:order=3" carries its options): a DataFrame with
    a row per run, nested keys as dotted columns (provenance.trace.sha256).

    timeline=True returns (runs, timeline): the runs and their timeline (compare --timeline,
    as load_timeline reads it: a row per run and sample, the run column naming the run)."""
    if isinstance(strategies, str):
        strategies = strategies.split(",")
    args = ["compare", os.fspath(trace), "--strategies", ",".join(strategies), "--json", "-",
            "--quiet"]
    if not timeline:
        return _frame(_run(args + _options(options))["runs"])
    with tempfile.TemporaryDirectory(prefix="buddyhint-") as tmp:
        path = os.path.join(tmp, "timeline.csv")
        runs = _frame(_run(args + ["--timeline", path] + _options(options))["runs"])
        return runs, load_timeline(path)


def _frame(runs):
    return _pd().json_normalize(runs, sep=".")


def load_runs(path):
    """A JSON file of runs as a DataFrame: compare's {"runs": [...]}, one replay's run, or
    merge's table (its "runs" are already flat)."""
    with open(path) as f:
        doc = json.load(f)
    if isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        return _frame(doc["runs"])
    if isinstance(doc, dict):
        return _frame([doc])
    if isinstance(doc, list):
        return _frame(doc)
    raise BuddyhintError("%s: not a run, a list of runs or {\"runs\": [...]}" % path)


def load_timeline(path, run=None):
    """A timeline CSV (replay --timeline, or compare --timeline with its run column) as a
    DataFrame, with time_s and MiB columns next to the byte ones; run picks one run of a
    compare timeline."""
    with open(path) as f:
        text = "".join(line for line in f if not line.startswith("#"))
    df = _pd().read_csv(io.StringIO(text))
    if "time_s" not in df.columns:
        raise BuddyhintError("%s: not a replay or compare timeline (no time_s column)" % path)
    if run is not None:
        if "run" not in df.columns:
            raise BuddyhintError("%s: a replay timeline has one run; run= is for compare's"
                                 % path)
        df = df[df["run"] == run].reset_index(drop=True)
    for col in [c for c in df.columns if c.endswith("_bytes")]:
        df[col[:-len("_bytes")] + "_mib"] = df[col] / 1048576.0
    return df
