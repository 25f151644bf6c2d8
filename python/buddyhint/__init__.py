"""libbuddyhint for analysis notebooks.

replay() and compare() run the installed ``buddyhint`` command with ``--json -`` and return its
runs (each with its provenance); load_runs() and load_timeline() read the files it writes;
gate() checks runs against a baseline under regression gates, as compare --baseline does;
Arena is the allocator itself, through ctypes over libbuddyhint.so.
"""
from ._arena import Arena, BuddyhintError, GFP, library, prefix, version
from ._gate import gate
from ._runs import compare, load_runs, load_timeline, replay

__all__ = ["Arena", "BuddyhintError", "GFP", "compare", "gate", "library", "load_runs",
           "load_timeline", "prefix", "replay", "version"]
__version__ = "0.2.0"
