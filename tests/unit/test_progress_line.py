"""The one line a phase shows while it works."""

from raypipe.progress import Goal, line


def test_a_phase_line_shows_what_was_counted_with_rate_and_eta():
    amounts = {"documents": 12_345, "bytes": 45.1e6, "rejected": 1_020}
    shown = line("read and clean", amounts, 10.0, Goal("bytes", 120e6))
    assert shown == (
        "read and clean: 12,345 documents, 45.1/120.0 MB, 1,234 docs/s, 1,020 rejected, ETA 0:17"
    )


def test_eta_counts_in_the_goal_unit_and_disappears_once_reached():
    assert line("pack", {"shards": 3}, 90.0, Goal("shards", 8)).endswith("3/8 shards, ETA 2:30")
    assert line("pack", {"shards": 8}, 90.0, Goal("shards", 8)) == "pack: 8/8 shards"


def test_before_anything_is_counted_the_line_shows_the_time():
    assert line("tokenize", {}, 4.2, Goal("documents", 100)) == "tokenize: 4 s"
