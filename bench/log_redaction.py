"""The cost of redacting an upstream's stderr before it is logged (``BoundedLog`` with a scrubber):
about 3.8 MB of 100-byte log lines written in 4 KiB reads, with the daemon holding 20 secrets, against
the same writes unredacted. Prints one line per mode with the time and the rate (best of ``--rounds``).

    python bench/log_redaction.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from pathlib import Path

from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.processes import BoundedLog

LINE = b"2026-12-05 07:00:00 INFO upstream: handled request id=12345 in 3.2 ms, everything is fine ....\n"
DATA = LINE * 40_000
CHUNKS = [DATA[i : i + 4096] for i in range(0, len(DATA), 4096)]


def write_all(scrubbed: bool) -> float:
    """Seconds to write every chunk (and close the log)."""
    known = KnownSecrets([secrets.token_urlsafe(24) for _ in range(20)])
    with tempfile.TemporaryDirectory() as folder:
        log = BoundedLog(Path(folder) / "up.log", limit=1 << 30, scrub=known.scrub if scrubbed else None)
        started = time.perf_counter()
        for chunk in CHUNKS:
            log.write(chunk)
        log.close()
        return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    rounds = ap.parse_args().rounds
    for name, scrubbed in (("plain", False), ("redacted", True)):
        best = min(write_all(scrubbed) for _ in range(rounds))
        print(f"{name}: {len(DATA) / 1e6:.1f} MB in {best * 1000:.0f} ms ({len(DATA) / 1e6 / best:.0f} MB/s)")


if __name__ == "__main__":
    main()
