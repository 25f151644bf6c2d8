"""The arena API of libbuddyhint through ctypes: Arena(config), alloc_pages, free_pages,
buddyinfo() as a DataFrame."""
import ctypes
import ctypes.util
import numbers
import os
import re
import tempfile


class BuddyhintError(Exception):
    """A libbuddyhint call or a buddyhint command failed."""


def _pd():
    """pandas, imported when a DataFrame is made: the Arena works without it."""
    try:
        import pandas
    except ImportError as e:
        raise BuddyhintError("DataFrames need pandas (Debian: python3-pandas; pip install "
                             "pandas)") from e
    return pandas


_MAX_NODES = 8
_NR_ZONE_TYPES = 4
_ZONES = ("DMA", "DMA32", "Normal", "Movable")
_BACKINGS = {"mmap": 0, "memfd": 1, "sim": 2}
_PCP_KEYS = {"thread": 0, "cpu": 1}

# the gfp flags of buddyhint.h (BH_GFP_*), by the kernel's names
GFP = {
    "KERNEL": 0x0, "DMA": 0x01, "HIGHMEM": 0x02, "DMA32": 0x04, "MOVABLE": 0x08,
    "RECLAIMABLE": 0x10, "HIGH": 0x20, "ATOMIC": 0x40, "ZERO": 0x80, "THISNODE": 0x100,
    "NOFALLBACK_WMARK": 0x200, "NO_KSWAPD": 0x400, "NOMEMALLOC": 0x800,
    "HIGHUSER_MOVABLE": 0x08 | 0x02,
}


class _ZoneLayout(ctypes.Structure):
    _fields_ = [("node", ctypes.c_int), ("type", ctypes.c_int),
                ("start_pfn", ctypes.c_uint64), ("spanned_pages", ctypes.c_uint64),
                ("present_pages", ctypes.c_uint64), ("managed_pages", ctypes.c_uint64),
                ("wmark_min", ctypes.c_uint64), ("wmark_low", ctypes.c_uint64),
                ("wmark_high", ctypes.c_uint64),
                ("protection", ctypes.c_uint64 * _NR_ZONE_TYPES)]


class _Config(ctypes.Structure):
    """bh_config_t, field for field (buddyhint.h); the tests check it against bh_config_init's
    documented defaults."""
    _fields_ = [("backing", ctypes.c_int), ("nr_nodes", ctypes.c_uint),
                ("zone_bytes", ctypes.c_uint64 * _NR_ZONE_TYPES),
                ("max_order", ctypes.c_uint), ("pageblock_order", ctypes.c_uint),
                ("mobility_grouping", ctypes.c_bool), ("shuffle", ctypes.c_bool),
                ("seed", ctypes.c_uint64), ("min_free_kbytes", ctypes.c_uint64),
                ("watermark_scale_factor", ctypes.c_uint),
                ("watermark_boost_factor", ctypes.c_uint),
                ("lowmem_reserve_ratio", ctypes.c_uint * _NR_ZONE_TYPES),
                ("pcp", ctypes.c_bool), ("nr_cpus", ctypes.c_uint), ("pcp_key", ctypes.c_int),
                ("pcp_batch", ctypes.c_uint), ("pcp_high", ctypes.c_uint),
                ("pcp_thp", ctypes.c_bool), ("pcp_high_tuning", ctypes.c_bool),
                ("pcp_free_high_raised", ctypes.c_bool), ("numa_bind", ctypes.c_bool),
                ("debug_checks", ctypes.c_bool), ("compact_large_blocks", ctypes.c_bool),
                ("reclaim_progress", ctypes.c_bool), ("smp", ctypes.c_bool),
                ("nr_layout_zones", ctypes.c_uint),
                ("layout_zones", _ZoneLayout * (_MAX_NODES * _NR_ZONE_TYPES)),
                ("cpu_data_slice_bytes", ctypes.c_uint64), ("compact_skip_unsplit", ctypes.c_bool)]


class _PaddedConfig(ctypes.Structure):
    # room past the end: a library whose bh_config_t grew writes there, not past the buffer
    _fields_ = [("cfg", _Config), ("pad", ctypes.c_ubyte * 4096)]


_lib = None


def prefix():
    """Where libbuddyhint is installed: BUDDYHINT_PREFIX, else the prefix `make install`
    installed this package with (recorded in _where.py, or the package's own place under it,
    PREFIX/lib/python3.X/...-packages/buddyhint), if that prefix holds the buddyhint command;
    else None (PATH and the dynamic linker decide)."""
    env = os.environ.get("BUDDYHINT_PREFIX")
    if env:
        return env
    try:  # written by make install (CMakeLists.txt)
        from ._where import PREFIX
        if os.access(os.path.join(PREFIX, "bin", "buddyhint"), os.X_OK):
            return PREFIX
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    guess = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
    return guess if os.access(os.path.join(guess, "bin", "buddyhint"), os.X_OK) else None


def _prefix_libraries(pre):
    """libbuddyhint.so.0 in the library folders of prefix pre (lib, lib64, lib/<multiarch>)."""
    found = []
    for sub in ("lib", "lib64"):
        d = os.path.join(pre, sub)
        found.append(os.path.join(d, "libbuddyhint.so.0"))
        try:
            found += [os.path.join(d, e, "libbuddyhint.so.0") for e in sorted(os.listdir(d))
                      if e.endswith("-linux-gnu")]
        except OSError:
            pass
    return [f for f in found if os.path.exists(f)]


def library():
    """The loaded libbuddyhint: BUDDYHINT_LIBRARY, else the one under prefix() (the
    BUDDYHINT_PREFIX environment variable, or where `make install` put this package), else
    libbuddyhint.so.0 as the dynamic linker finds it."""
    global _lib
    if _lib is not None:
        return _lib
    pre = prefix()
    names = [os.environ.get("BUDDYHINT_LIBRARY")] + (_prefix_libraries(pre) if pre else []) + \
        ["libbuddyhint.so.0", ctypes.util.find_library("buddyhint")]
    errors = []
    for name in [n for n in names if n]:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise BuddyhintError("libbuddyhint is not installed (make install), or set "
                             "BUDDYHINT_PREFIX to its install prefix (or BUDDYHINT_LIBRARY to "
                             "its path): " + "; ".join(errors))
    vp, c = ctypes.c_void_p, ctypes
    lib.bh_version.restype = c.c_char_p
    lib.bh_strerror.restype = c.c_char_p
    lib.bh_strerror.argtypes = [c.c_int]
    lib.bh_config_init.argtypes = [c.POINTER(_Config)]
    lib.bh_config_validate.argtypes = [c.POINTER(_Config), c.POINTER(c.c_char_p)]
    lib.bh_arena_create.argtypes = [c.POINTER(_Config), c.POINTER(vp)]
    lib.bh_arena_destroy.argtypes = [vp]
    lib.bh_arena_pages.restype = c.c_uint64
    lib.bh_arena_pages.argtypes = [vp]
    lib.bh_alloc_pfn.argtypes = [vp, c.c_uint, c.c_uint, c.c_int, c.POINTER(c.c_uint64)]
    lib.bh_free_pfn.argtypes = [vp, c.c_uint64, c.c_uint, c.c_int]
    lib.bh_dump_buddyinfo.argtypes = [vp, vp]
    lib.bh_drain_pcp.argtypes = [vp]
    lib.bh_arena_check.restype = c.c_long
    lib.bh_arena_check.argtypes = [vp, vp, c.c_uint]
    _lib = lib
    return lib


def version():
    """The library's version string."""
    return library().bh_version().decode()


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    return libc


def _check(rc, what):
    if rc:
        raise BuddyhintError("%s: %s" % (what, library().bh_strerror(rc).decode()))


def _int(what, value, lo, hi):
    """value as an int in [lo, hi], else BuddyhintError: ctypes would wrap it silently
    (order=2**32 as order 0, seed=-1 as 2**64 - 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise BuddyhintError("%s must be an integer, not %r" % (what, value))
    if not lo <= int(value) <= hi:
        raise BuddyhintError("%s = %d is out of range [%d, %d]" % (what, value, lo, hi))
    return int(value)


def _ctype_range(ctype):
    """The values a ctypes integer type holds."""
    bits = 8 * ctypes.sizeof(ctype)
    if ctype(-1).value == -1:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


_U32 = (0, (1 << 32) - 1)
_U64 = (0, (1 << 64) - 1)
_I32 = (-(1 << 31), (1 << 31) - 1)


def _gfp(gfp):
    if isinstance(gfp, numbers.Integral) and not isinstance(gfp, bool):
        return _int("gfp", gfp, *_U32)
    flags = 0
    for name in str(gfp).upper().replace("GFP_", "").replace("__", "").split("|"):
        name = name.strip()
        if name not in GFP:
            raise BuddyhintError("unknown gfp flag %r (buddyhint.GFP lists them)" % name)
        flags |= GFP[name]
    return flags


class Arena:
    """An arena: Linux's zoned buddy allocator over memory of its own.

    config is a dict of bh_config_t fields (buddyhint.h) over bh_config_init's defaults:
    backing ("mmap", "memfd" or "sim"), nr_nodes, zone_bytes ({"Normal": 256 << 20, ...} or a
    list of four), max_order, pageblock_order, nr_cpus, pcp, mobility_grouping, seed, ...
    """

    def __init__(self, config=None):
        lib = library()
        self._padded = _PaddedConfig()
        cfg = self._padded.cfg
        lib.bh_config_init(ctypes.byref(cfg))
        for key, value in (config or {}).items():
            self._set(cfg, key, value)
        msg = ctypes.c_char_p()
        if lib.bh_config_validate(ctypes.byref(cfg), ctypes.byref(msg)):
            raise BuddyhintError("bad arena configuration: %s"
                                 % (msg.value.decode() if msg.value else "invalid"))
        self._arena = ctypes.c_void_p()
        _check(lib.bh_arena_create(ctypes.byref(cfg), ctypes.byref(self._arena)),
               "bh_arena_create")
        self.max_order = cfg.max_order

    @staticmethod
    def _set(cfg, key, value):
        names = [f[0] for f in _Config._fields_ if f[0] != "layout_zones"]
        if key not in names:
            raise BuddyhintError("unknown arena setting %r (one of %s)" % (key, ", ".join(names)))
        if key == "backing" and isinstance(value, str):
            if value not in _BACKINGS:
                raise BuddyhintError("backing must be mmap, memfd or sim, not %r" % value)
            value = _BACKINGS[value]
        if key == "pcp_key" and isinstance(value, str):
            value = _PCP_KEYS[value]
        if key in ("zone_bytes", "lowmem_reserve_ratio"):
            arr = getattr(cfg, key)
            rng = _ctype_range(arr._type_)
            if isinstance(value, dict):
                for zone, v in value.items():
                    if zone not in _ZONES:
                        raise BuddyhintError("unknown zone %r (one of %s)"
                                             % (zone, ", ".join(_ZONES)))
                    arr[_ZONES.index(zone)] = _int("%s[%s]" % (key, zone), v, *rng)
            else:
                if len(value) != _NR_ZONE_TYPES:
                    raise BuddyhintError("%s wants %d values" % (key, _NR_ZONE_TYPES))
                for i, v in enumerate(value):
                    arr[i] = _int("%s[%d]" % (key, i), v, *rng)
            return
        ctype = dict((f[0], f[1]) for f in _Config._fields_)[key]
        if ctype is ctypes.c_bool:
            if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
                raise BuddyhintError("%s must be True or False, not %r" % (key, value))
            value = bool(value)
        elif hasattr(ctype, "_type_") and isinstance(ctype._type_, str) and ctype._type_ in "bBhHiIlLqQ":
            value = _int(key, value, *_ctype_range(ctype))
        setattr(cfg, key, value)

    @property
    def config(self):
        """The configuration the arena was made with, as a dict."""
        cfg = self._padded.cfg
        out = {}
        for name, _ in _Config._fields_:
            if name == "layout_zones":
                continue
            v = getattr(cfg, name)
            out[name] = list(v) if hasattr(v, "__len__") else v
        return out

    def _handle(self):
        if not self._arena:
            raise BuddyhintError("the arena is closed")
        return self._arena

    @property
    def nr_pages(self):
        """Pages the arena spans."""
        return library().bh_arena_pages(self._handle())

    def alloc_pages(self, order=0, gfp="KERNEL", cpu=0):
        """Allocates 2^order pages: their first pfn.  gfp is flags (an int) or names
        ("HIGHUSER_MOVABLE", "MOVABLE|ZERO"); BuddyhintError if the arena cannot serve it."""
        order, cpu = _int("order", order, *_U32), _int("cpu", cpu, *_I32)
        pfn = ctypes.c_uint64()
        _check(library().bh_alloc_pfn(self._handle(), _gfp(gfp), order, cpu,
                                      ctypes.byref(pfn)),
               "alloc_pages(order=%d)" % order)
        return pfn.value

    def free_pages(self, pfn, order=0, cpu=0):
        """Frees the block of 2^order pages at pfn."""
        pfn, order = _int("pfn", pfn, *_U64), _int("order", order, *_U32)
        cpu = _int("cpu", cpu, *_I32)
        _check(library().bh_free_pfn(self._handle(), pfn, order, cpu),
               "free_pages(%d, order=%d)" % (pfn, order))

    def drain_pcp(self):
        """Gives every per-CPU list's pages back to the buddy lists."""
        library().bh_drain_pcp(self._handle())

    def _dump(self, fn, *args):
        libc = _libc()
        with tempfile.NamedTemporaryFile("r") as tmp:
            f = libc.fopen(tmp.name.encode(), b"w")
            if not f:
                raise BuddyhintError("cannot open a temporary file")
            rc = fn(self._handle(), f, *args)
            libc.fclose(f)
            return rc, tmp.read()

    def check(self):
        """The allocator's invariant checker: the number of violations."""
        n, _ = self._dump(library().bh_arena_check, 0)
        return n

    def buddyinfo(self):
        """/proc/buddyinfo of the arena: a DataFrame with a row per zone (node, zone) and a
        column per order (0..max_order) of free blocks."""
        rc, text = self._dump(library().bh_dump_buddyinfo)
        _check(rc, "bh_dump_buddyinfo")
        rows = []
        for line in text.splitlines():
            m = re.match(r"Node (\d+), zone\s+(\S+)\s+(.*)$", line)
            if not m:
                continue
            counts = [int(x) for x in m.group(3).split()]
            rows.append([int(m.group(1)), m.group(2)] + counts)
        cols = ["node", "zone"] + list(range(self.max_order + 1))
        return _pd().DataFrame(rows, columns=cols)

    def close(self):
        """Destroys the arena (also when the object goes, or at the end of a with block)."""
        if getattr(self, "_arena", None):
            library().bh_arena_destroy(self._arena)
            self._arena = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
