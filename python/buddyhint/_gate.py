"""Regression gates: runs against their baseline runs under tolerances, through the library's
bh_gate_check, matched as `buddyhint compare --baseline` matches them."""
import ctypes
import json
import math
import numbers
import os


from ._arena import BuddyhintError, _pd, library

_NAME_MAX = 64  # BH_FIGURE_NAME_MAX
_MAX_DEFAULTS = 8  # BH_GATE_MAX_DEFAULTS
_STATUS = {0: "pass", 1: "FAIL", 2: "missing"}


class _Figure(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * _NAME_MAX), ("value", ctypes.c_double)]


class _Gate(ctypes.Structure):
    _fields_ = [("metric", ctypes.c_char * _NAME_MAX), ("sign", ctypes.c_int),
                ("pct", ctypes.c_double), ("abs", ctypes.c_double)]


class _Result(ctypes.Structure):
    _fields_ = [("gate", ctypes.POINTER(_Gate)), ("status", ctypes.c_int),
                ("baseline", ctypes.c_double), ("now", ctypes.c_double),
                ("change_pct", ctypes.c_double), ("allowed", ctypes.c_double)]


_ready = False


def _lib():
    global _ready
    lib, c = library(), ctypes
    if not _ready:
        lib.bh_gate_parse.argtypes = [c.c_char_p, c.POINTER(_Gate), c.c_char_p, c.c_size_t]
        lib.bh_gate_format.argtypes = [c.POINTER(_Gate), c.c_char_p, c.c_size_t]
        lib.bh_gate_defaults.restype = c.c_size_t
        lib.bh_gate_defaults.argtypes = [c.POINTER(_Gate), c.c_size_t, c.POINTER(_Figure),
                                         c.c_size_t]
        lib.bh_gate_deterministic.restype = c.c_bool
        lib.bh_gate_deterministic.argtypes = [c.c_char_p, c.c_char_p, c.c_double]
        lib.bh_gate_check.argtypes = [c.POINTER(_Gate), c.c_size_t, c.POINTER(_Figure),
                                      c.c_size_t, c.POINTER(_Figure), c.c_size_t,
                                      c.POINTER(_Result)]
        _ready = True
    return lib


def _flatten(obj, prefix="", out=None):
    out = {} if out is None else out
    for k, v in obj.items():
        name = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            _flatten(v, name, out)
        else:
            out[name] = v
    return out


def _runs(what):
    """Runs as flat dicts, from a path, compare's {"runs": [...]}, one run, a list of runs, or
    a DataFrame of compare() / load_runs()."""
    if isinstance(what, (str, os.PathLike)):
        with open(what) as f:
            what = json.load(f)
    if type(what).__name__ == "DataFrame":
        what = [{k: v for k, v in r.items() if not (isinstance(v, float) and math.isnan(v))}
                for r in what.to_dict("records")]
    if isinstance(what, dict):
        what = what["runs"] if isinstance(what.get("runs"), list) else [what]
    if not isinstance(what, list) or not all(isinstance(r, dict) for r in what):
        raise BuddyhintError("runs: a path, {\"runs\": [...]}, a run, a list of runs or a "
                             "DataFrame")
    return [_flatten(r) for r in what]


def _figures(run):
    figs = [(k, float(v)) for k, v in run.items()
            if not k.startswith("provenance.") and len(k) < _NAME_MAX
            and isinstance(v, numbers.Number) and not math.isnan(v)]
    arr = (_Figure * max(len(figs), 1))()
    for i, (k, v) in enumerate(figs):
        arr[i].name, arr[i].value = k.encode(), v
    return arr, len(figs)


def _options(run):
    return {k: v for k, v in run.items()
            if k.startswith("provenance.options.") or k == "provenance.arena.backing"}


def _match(base, run):
    key = (run.get("provenance.trace.sha256"), run.get("strategy"))
    if key[0] is None:
        raise BuddyhintError("a run of %s has no provenance.trace.sha256" % run.get("trace"))
    cands = [b for b in base
             if (b.get("provenance.trace.sha256"), b.get("strategy")) == key]
    same = [b for b in cands if _options(b) == _options(run)]
    if same:
        return same[0]
    backing = "provenance.arena.backing"
    if len(cands) == 1 and cands[0].get(backing) != run.get(backing):
        raise BuddyhintError("the baseline's run of strategy %r is in %s backing, this one in %s"
                             % (key[1], cands[0].get(backing), run.get(backing)))
    if len(cands) == 1:
        return cands[0]
    raise BuddyhintError("the baseline has %s run of strategy %r on %s (SHA-256 %.16s...)%s"
                         % ("no" if not cands else "more than one", key[1],
                            run.get("provenance.trace.name", run.get("trace")), key[0],
                            "" if not cands else ", none with this run's options"))


def _noisy(lib, run, metric):
    if str(run.get("provenance.options.strategy", "")).startswith("jemalloc"):
        return True
    backing = str(run.get("provenance.arena.backing", run.get("backing", "mmap")))
    speed = float(run.get("provenance.options.speed", 0) or 0)
    return not lib.bh_gate_deterministic(metric.encode(), backing.encode(), speed)


def _gates(lib, tolerances, run, base_figs, nbase, allow_noisy):
    if tolerances is None:
        d = (_Gate * _MAX_DEFAULTS)()
        n = lib.bh_gate_defaults(d, _MAX_DEFAULTS, base_figs, nbase)
        return [d[i] for i in range(n) if not _noisy(lib, run, d[i].metric.decode())]
    gates = []
    for spec in [tolerances] if isinstance(tolerances, str) else tolerances:
        g, err = _Gate(), ctypes.create_string_buffer(256)
        if lib.bh_gate_parse(spec.encode(), ctypes.byref(g), err, 256):
            raise BuddyhintError("tolerance %s" % err.value.decode())
        if _noisy(lib, run, g.metric.decode()) and not allow_noisy:
            raise BuddyhintError("tolerance %s: %s is not deterministic in this run (sim "
                                 "backing on the virtual clock is); allow_noisy=True gates it "
                                 "anyway" % (spec, g.metric.decode()))
        gates.append(g)
    return gates


def gate(baseline, runs, tolerances=None, allow_noisy=False):
    """Each run of runs against its run of baseline, under tolerances ("refaults=+10%",
    "returned_bytes=-5%", "refaults=+10%:64"; None: compare's default set, without the figures
    that are not deterministic in the run).  baseline and runs are what compare --json writes
    (a path, the loaded JSON, a list of runs) or a DataFrame of compare() or load_runs().

    Runs are matched by the SHA-256 of their trace and their strategy label, as
    `buddyhint compare --baseline` matches them.  Returns a DataFrame with a row per run and
    gate: trace, strategy, metric, gate, baseline, now, change_pct, allowed, status ("pass",
    "FAIL", "missing").  Raises BuddyhintError for a run the baseline lacks, a malformed
    tolerance, or one on a figure that moves from run to run (without allow_noisy).
    """
    lib = _lib()
    base = _runs(baseline)
    rows = []
    for run in _runs(runs):
        b = _match(base, run)
        bf, nb = _figures(b)
        nf, nn = _figures(run)
        gates = _gates(lib, tolerances, run, bf, nb, allow_noisy)
        if not gates:
            continue
        garr = (_Gate * len(gates))(*gates)
        res = (_Result * len(gates))()
        if lib.bh_gate_check(garr, len(gates), bf, nb, nf, nn, res) < 0:
            raise BuddyhintError("bh_gate_check failed")
        for g, r in zip(garr, res):
            text = ctypes.create_string_buffer(128)
            lib.bh_gate_format(ctypes.byref(g), text, 128)
            rows.append({"trace": run.get("provenance.trace.name", run.get("trace")),
                         "strategy": run.get("strategy"), "metric": g.metric.decode(),
                         "gate": text.value.decode().split("=", 1)[1],
                         "baseline": r.baseline, "now": r.now, "change_pct": r.change_pct,
                         "allowed": r.allowed, "status": _STATUS.get(r.status, "?")})
    return _pd().DataFrame(rows, columns=["trace", "strategy", "metric", "gate", "baseline", "now",
                                       "change_pct", "allowed", "status"])
