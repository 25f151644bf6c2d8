"""The Python package against an installed libbuddyhint and buddyhint command.

Run by tests/python/run.sh (ctest python_package), which installs the build into a scratch
prefix, pip-installs this package into a scratch virtual environment and runs this suite with
that prefix on PATH and LD_LIBRARY_PATH: nothing here names the build folder.
"""
import ctypes
import hashlib
import json
import os
import subprocess

import pandas as pd
import pytest

import buddyhint
from buddyhint._arena import _Config

TRACES = os.environ["BH_TRACES"]
TRACE = os.path.join(TRACES, "gen-memhog-256M.bht.zst")


def test_loaded_from_the_installed_copy():
    # the package found the library and the command by the usual search, not by a path
    assert "BUDDYHINT_LIBRARY" not in os.environ and "BUDDYHINT" not in os.environ
    assert buddyhint.version() == buddyhint.__version__
    assert buddyhint.__file__.startswith(os.environ["BH_VENV"])


def test_config_struct_matches_the_library():
    # bh_config_init's documented defaults (buddyhint.h), read through the ctypes mirror:
    # a field out of place reads as something else
    cfg = buddyhint._arena._PaddedConfig()
    buddyhint.library().bh_config_init(ctypes.byref(cfg.cfg))
    c = cfg.cfg
    assert ctypes.sizeof(_Config) == 3216  # sizeof(bh_config_t) on x86-64
    assert c.backing == 0 and c.nr_nodes == 1
    assert list(c.zone_bytes) == [16 << 20, 496 << 20, 512 << 20, 0]
    assert (c.max_order, c.pageblock_order) == (10, 9)
    assert c.mobility_grouping and not c.shuffle and c.seed == 1
    assert (c.watermark_scale_factor, c.watermark_boost_factor) == (10, 15000)
    assert list(c.lowmem_reserve_ratio) == [256, 256, 32, 0]
    assert c.pcp and c.nr_cpus == 2 and c.pcp_thp and c.pcp_high_tuning and not c.numa_bind
    assert not c.pcp_free_high_raised  # the 6.12 rule
    assert c.compact_large_blocks and c.smp and c.nr_layout_zones == 0
    assert c.cpu_data_slice_bytes == 2 << 20 and not c.compact_skip_unsplit  # after layout_zones
    assert bytes(cfg.pad) == bytes(4096)  # nothing written past the mirror's end


def test_arena_alloc_free_buddyinfo():
    # without per-CPU lists, which would take a batch of order-3 blocks at once (rmqueue_pcplist)
    zones = {"DMA": 0, "DMA32": 0, "Normal": 64 << 20}
    with buddyhint.Arena({"backing": "sim", "zone_bytes": zones, "pcp": False}) as a:
        bi = a.buddyinfo()
        assert list(bi.columns) == ["node", "zone"] + list(range(11))
        assert list(bi["zone"]) == ["Normal"]
        assert int(bi.loc[0, 10]) == 16  # 64 MiB in 4 MiB blocks
        pfn = a.alloc_pages(order=3)
        assert 0 <= pfn < a.nr_pages and pfn % 8 == 0
        bi = a.buddyinfo()
        # one 4 MiB block split down to order 3: one free block at each order 3..9
        assert int(bi.loc[0, 10]) == 15
        assert [int(bi.loc[0, o]) for o in range(3, 10)] == [1] * 7
        a.free_pages(pfn, order=3)
        a.drain_pcp()
        assert int(a.buddyinfo().loc[0, 10]) == 16
        assert a.check() == 0


def test_arena_errors():
    with pytest.raises(buddyhint.BuddyhintError, match="unknown arena setting"):
        buddyhint.Arena({"no_such": 1})
    with pytest.raises(buddyhint.BuddyhintError, match="bad arena configuration"):
        buddyhint.Arena({"backing": "sim", "max_order": 40})
    with buddyhint.Arena({"backing": "sim", "zone_bytes": [0, 0, 8 << 20, 0]}) as a:
        with pytest.raises(buddyhint.BuddyhintError):
            a.free_pages(a.nr_pages + 1024, order=0)
        with pytest.raises(buddyhint.BuddyhintError):
            for _ in range(100):  # 8 MiB holds two 4 MiB blocks, less the reserves
                a.alloc_pages(order=10)
    a.close()
    with pytest.raises(buddyhint.BuddyhintError, match="closed"):
        a.alloc_pages()


def test_replay_is_the_command_json():
    run = buddyhint.replay(TRACE, strategy="bubble", opts={"order": 3}, backing="sim", seed=5)
    out = subprocess.run(["buddyhint", "replay", TRACE, "--strategy", "bubble", "--opt",
                          "order=3", "--backing", "sim", "--seed", "5", "--json", "-",
                          "--quiet"], stdout=subprocess.PIPE, check=True, text=True).stdout
    ref = json.loads(out)
    for k in ("rss_final_bytes", "reported_bytes", "refaults", "events"):
        assert run[k] == ref[k]
    p = run["provenance"]
    assert p["options"]["strategy_options"] == {"order": "3"} and p["seed"] == 5
    with open(TRACE, "rb") as f:
        assert p["trace"]["sha256"] == hashlib.sha256(f.read()).hexdigest()


def test_compare_dataframe_and_load_runs(tmp_path):
    df = buddyhint.compare(TRACE, ["none", "bubble", "bubble:order=3"], backing="sim")
    assert isinstance(df, pd.DataFrame)
    assert list(df["strategy"]) == ["none", "bubble", "bubble:order=3"]
    assert "provenance.options.strategy_options.order" in df.columns
    assert df["rss_final_bytes"].iloc[0] >= df["rss_final_bytes"].iloc[2]
    path = tmp_path / "runs.json"
    subprocess.run(["buddyhint", "compare", TRACE, "--strategies", "none,bubble:order=3",
                    "--backing", "sim", "--quiet", "--json", str(path),
                    "--timeline", str(tmp_path / "tl.csv")], check=True,
                   stdout=subprocess.DEVNULL)
    runs = buddyhint.load_runs(path)
    assert list(runs["strategy"]) == ["none", "bubble:order=3"]
    assert (runs["rss_final_bytes"].values == df["rss_final_bytes"].values[[0, 2]]).all()
    tl = buddyhint.load_timeline(tmp_path / "tl.csv")
    assert set(tl["run"]) == {"none", "bubble:order=3"}
    one = buddyhint.load_timeline(tmp_path / "tl.csv", run="none")
    assert (one["run"] == "none").all() and one["time_s"].is_monotonic_increasing
    assert (one["resident_mib"] * 1048576 == one["resident_bytes"]).all()


def test_compare_with_its_timeline():
    runs, tl = buddyhint.compare(TRACE, ["none", "bubble"], backing="sim", timeline=True)
    assert list(runs["strategy"]) == ["none", "bubble"]
    assert isinstance(tl, pd.DataFrame) and set(tl["run"]) == {"none", "bubble"}
    # the timeline's last sample is each run's end: the summary's resident memory
    for name, row in zip(runs["strategy"], runs.itertuples()):
        last = tl[tl["run"] == name].iloc[-1]
        assert last["resident_bytes"] == row.rss_final_bytes
        assert last["resident_mib"] * 1048576 == last["resident_bytes"]


def test_load_runs_of_one_replay(tmp_path):
    path = tmp_path / "r.json"
    subprocess.run(["buddyhint", "replay", TRACE, "--backing", "sim", "--quiet", "--json",
                    str(path)], check=True, stdout=subprocess.DEVNULL)
    df = buddyhint.load_runs(path)
    assert len(df) == 1 and df.loc[0, "strategy"] == "none"


def test_bad_input_is_an_error(tmp_path):
    with pytest.raises(buddyhint.BuddyhintError, match="failed"):
        buddyhint.replay(tmp_path / "missing.trace")
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(buddyhint.BuddyhintError, match="not a replay"):
        buddyhint.load_timeline(bad)


def test_gate_against_a_baseline(tmp_path):
    strategies = ["none", "bubble", "bubble:order=3"]
    base = buddyhint.compare(TRACE, strategies, backing="sim")
    same = buddyhint.gate(base, buddyhint.compare(TRACE, strategies, backing="sim"))
    # the default set in sim backing: rss_final_bytes, refaults, madvise_calls and
    # returned_bytes (the summary has it) per run
    assert len(same) == 12 and (same["status"] == "pass").all()
    assert set(same["metric"]) == {"rss_final_bytes", "refaults", "madvise_calls",
                                   "returned_bytes"}
    # bubble's delay beyond the idle time: nothing reported, its memory stays resident
    worse = buddyhint.compare(TRACE, strategies, backing="sim", opt="bubble.delay=100s")
    res = buddyhint.gate(base, worse)
    failed = res[res["status"] == "FAIL"]
    assert set(failed["strategy"]) == {"bubble", "bubble:order=3"}
    # it keeps its memory resident and gives none of it back
    assert set(failed["metric"]) == {"rss_final_bytes", "returned_bytes"}
    row = failed[failed["metric"] == "rss_final_bytes"].iloc[0]
    assert row["now"] > row["baseline"] and row["change_pct"] > 2 and row["gate"] == "+2%"
    # the same verdict as the command's, from the files it writes
    path = tmp_path / "base.json"
    subprocess.run(["buddyhint", "compare", TRACE, "--strategies", ",".join(strategies),
                    "--backing", "sim", "--quiet", "--json", str(path)], check=True,
                   stdout=subprocess.DEVNULL)
    p = subprocess.run(["buddyhint", "compare", TRACE, "--strategies", ",".join(strategies),
                        "--backing", "sim", "--quiet", "--opt", "bubble.delay=100s",
                        "--baseline", str(path)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == 1 and p.stderr.count("regression:") == len(failed)
    assert (buddyhint.gate(path, worse)["status"] == res["status"]).all()
    # explicit tolerances; a zero baseline allows no rise; a move the other way passes
    t = buddyhint.gate(base, worse, ["refaults=+0%", "reported_bytes=-1%:1048576"])
    assert list(t["gate"].unique()) == ["+0%", "-1%:1048576"]
    none = t[t["strategy"] == "none"]
    assert (none["baseline"] == 0).all() and (none["status"] == "pass").all()
    bub = t[(t["strategy"] == "bubble") & (t["metric"] == "refaults")].iloc[0]
    assert bub["now"] < bub["baseline"] and bub["status"] == "pass"


def test_gate_errors():
    base = buddyhint.compare(TRACE, ["none"], backing="sim")
    with pytest.raises(buddyhint.BuddyhintError, match="direction"):
        buddyhint.gate(base, base, "refaults=10%")
    with pytest.raises(buddyhint.BuddyhintError, match="not deterministic"):
        buddyhint.gate(base, base, "wall_seconds=+5%")
    assert buddyhint.gate(base, base, "wall_seconds=+1000%", allow_noisy=True)["status"][0] \
        == "pass"
    with pytest.raises(buddyhint.BuddyhintError, match="in sim backing, this one in mmap"):
        buddyhint.gate(base, buddyhint.compare(TRACE, ["none"], backing="mmap"))
    other = buddyhint.compare(TRACE, ["bitmap"], backing="sim")
    with pytest.raises(buddyhint.BuddyhintError, match="no run of strategy 'bitmap'"):
        buddyhint.gate(base, other)


def test_out_of_range_values_are_refused_not_wrapped():
    # ctypes would wrap them: order=2**32 as order 0, seed=-1 as 2**64 - 1
    for bad in ({"seed": -1}, {"max_order": 2**32}, {"mobility_grouping": 2},
                {"zone_bytes": {"Normal": -1}}):
        with pytest.raises(buddyhint.BuddyhintError, match="range|True or False"):
            buddyhint.Arena(dict(backing="sim", **bad))
    with buddyhint.Arena({"backing": "sim"}) as a:
        for call in (lambda: a.alloc_pages(order=2**32), lambda: a.alloc_pages(order=-1),
                     lambda: a.alloc_pages(gfp=2**40), lambda: a.alloc_pages(cpu=2**31),
                     lambda: a.free_pages(-1), lambda: a.free_pages(2**64)):
            with pytest.raises(buddyhint.BuddyhintError, match="out of range"):
                call()
        assert a.check() == 0  # nothing was allocated by the refused calls
        assert int(a.buddyinfo().iloc[:, 2:].sum().sum()) > 0


def test_a_failed_write_is_an_error_not_a_run():
    # exit 1 with a JSON on stdout: a run whose checker found violations, or a failure
    with pytest.raises(buddyhint.BuddyhintError, match="write failed|No space"):
        buddyhint.replay(TRACE, backing="sim", timeline="/dev/full")
    with pytest.raises(buddyhint.BuddyhintError, match="not a string"):
        buddyhint.replay(TRACE, backing=["sim", object()])
    with pytest.raises(buddyhint.BuddyhintError, match="option name"):
        buddyhint.replay(TRACE, **{"backing sim --x": 1})
