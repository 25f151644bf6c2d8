#!/usr/bin/env python3
"""A small mixed allocation pattern for `buddyhint record`: 200 buffers of 1 MiB (each its own
mmap in glibc's malloc), every other one freed, the rest hashed, then 50 objects of 3 MiB;
everything is freed when the process exits.  Prints the first bytes of the digest."""
import hashlib

buffers = [bytearray(1 << 20) for _ in range(200)]
del buffers[::2]
digest = hashlib.sha256()
for b in buffers:
    digest.update(b)
more = [bytes(3 << 20) for _ in range(50)]
print(digest.hexdigest()[:8], len(more))
