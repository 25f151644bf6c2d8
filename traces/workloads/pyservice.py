"""A service that handles bursts of requests with idle time between them (Python 3.11).

ROUNDS (default 8) bursts of REQUESTS (default 400) requests, each of which builds a working
buffer of 16 KiB to 4 MiB (bytes written, so its pages are touched) and a result of a tenth of
that size that goes into an LRU cache of CACHE (default 256) entries; the buffer is dropped
when the request ends and the oldest results when the cache is full.  After each burst the
service sleeps GAP seconds (default 3).  The working buffers come and go through glibc's
malloc (mmap above its threshold, the heap below it), so freed memory comes back to the
kernel in pieces of many sizes while cached results stay live among it.  Seeded (SEED,
default 1).

    python3 traces/workloads/pyservice.py [ROUNDS [REQUESTS [GAP [CACHE [SEED]]]]]
"""
import collections
import random
import sys
import time


def main() -> int:
    args = [float(a) for a in sys.argv[1:]]
    rounds = int(args[0]) if len(args) > 0 else 8
    requests = int(args[1]) if len(args) > 1 else 400
    gap = args[2] if len(args) > 2 else 3.0
    cache_size = int(args[3]) if len(args) > 3 else 256
    random.seed(int(args[4]) if len(args) > 4 else 1)
    cache: "collections.OrderedDict[int, bytes]" = collections.OrderedDict()
    key = 0
    for _ in range(rounds):
        for _ in range(requests):
            size = 16384 << random.randrange(9)  # 16 KiB .. 4 MiB
            work = bytes([key & 0xFF]) * size
            result = work[: size // 10]
            cache[key] = result
            key += 1
            while len(cache) > cache_size:
                cache.popitem(last=False)
            del work
        time.sleep(gap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
