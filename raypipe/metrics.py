"""raypipe's own Prometheus metrics, recorded where the work happens.

Ray exports them on every node's metrics endpoint (`ray start --metrics-export-port`)
with a `ray_` prefix and a `_total` suffix: `ray_raypipe_documents_out_total`.
dashboards/raypipe.json charts them beside Ray Data's operator metrics.
"""

from __future__ import annotations

from functools import cache

from ray.util.metrics import Counter

COUNTERS = {
    "raypipe_documents_in": ("Documents entering a stage alive", ("stage",)),
    "raypipe_documents_out": ("Documents leaving a stage alive", ("stage",)),
    "raypipe_rejects": ("Documents rejected, by stage and reason", ("stage", "reason")),
    "raypipe_bytes_read": ("Bytes of input files read", ("source",)),
    "raypipe_tokens_written": ("Tokens packed into published shards", ()),
    "raypipe_shards_written": ("Shards published", ()),
}


@cache
def _counter(name: str) -> Counter:
    description, tags = COUNTERS[name]
    return Counter(name, description=description, tag_keys=tags)


def count(name: str, value: float, **tags: str) -> None:
    if value:
        _counter(name).inc(value, tags=tags or None)
