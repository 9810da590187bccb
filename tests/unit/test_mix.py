import math

import numpy as np
import pytest

from raypipe import mix
from raypipe.config import ConfigError, build_config


def mixture(*sources):
    cfg = build_config({"sources": [{"name": n, "paths": ["x"], **o} for n, o in sources]})
    return mix.sources(cfg)


def test_epochs_only_mixture_reads_each_source_as_told():
    m = mixture(("web", {}), ("wiki", {"epochs": 3.4}), ("code", {"epochs": 0.44}))
    assert mix.plan_epochs({"web": 10, "wiki": 5, "code": 7}, m) == {
        "web": 1.0,
        "wiki": 3.4,
        "code": 0.44,
    }


def test_shares_beside_a_fixed_source_fill_their_part_of_the_total():
    m = mixture(("web", {}), ("books", {"share": 0.25}), ("math", {"share": 0.25}))
    epochs = mix.plan_epochs({"web": 1000, "books": 250, "math": 1000}, m)
    # web fixes 1000 tokens = 50% of 2000; books needs 500 of 250 (2 epochs), math 0.5.
    assert epochs == pytest.approx({"web": 1.0, "books": 2.0, "math": 0.5})


def test_all_shares_size_the_total_by_the_scarcest_source():
    m = mixture(("web", {"share": 0.5}), ("code", {"share": 0.5, "max_epochs": 2}))
    epochs = mix.plan_epochs({"web": 10_000, "code": 1_000}, m)
    assert epochs["code"] == pytest.approx(2.0)
    assert epochs["web"] == pytest.approx(0.2)


def test_unreachable_share_is_an_error_naming_the_source():
    m = mixture(("web", {}), ("books", {"share": 0.5, "max_epochs": 2}))
    with pytest.raises(ConfigError, match=r"sources.books: share 0.5 needs 4.00 epochs"):
        mix.plan_epochs({"web": 1000, "books": 250}, m)
    with pytest.raises(ConfigError, match="shares sum to 0.9, not 1"):
        mix.plan_epochs({"a": 1, "b": 1}, mixture(("a", {"share": 0.4}), ("b", {"share": 0.5})))
    with pytest.raises(ConfigError, match="no tokens left"):
        mix.plan_epochs({"web": 10}, mixture(("web", {}), ("b", {"share": 0.5})))


def test_fractional_epochs_take_the_right_share_of_tokens_deterministically():
    rng = np.random.default_rng(1)
    uids = np.arange(20_000, dtype=np.int64)
    tokens = rng.integers(10, 5_000, len(uids))
    hist = mix.histogram(uids, tokens, seed=3)
    assert sum(hist) == tokens.sum()
    for epochs in (0.3, 1.0, 2.7):
        cut = mix.extra_copy_bins(hist, epochs - math.floor(epochs))
        copies = mix.copies(mix.draw_bins(uids, 3), epochs, cut)
        assert abs((copies * tokens).sum() / tokens.sum() - epochs) < 0.005
        again = mix.copies(mix.draw_bins(uids, 3), epochs, cut)
        assert np.array_equal(copies, again)


def test_copies_of_a_document_get_distinct_keys():
    uids = np.array([7, 7, 7, 8], np.int64)
    keys = mix.copy_keys(uids, np.array([0, 1, 2, 0]), seed=0)
    assert len(set(keys.tolist())) == 4


def test_per_source_options_override_the_defaults():
    cfg = build_config(
        {
            "input": {"text_field": "body"},
            "sources": [
                {
                    "name": "code",
                    "paths": ["c/"],
                    "input": {"text_field": "content"},
                    "stages": {"quality.enabled": False},
                },
                {"name": "web", "paths": ["w/"]},
            ],
        }
    )
    code, web = mix.sources(cfg)
    assert (code.input.text_field, code.input.source, code.input.paths) == (
        "content",
        "code",
        ["c/"],
    )
    assert not code.stages.quality.enabled and web.stages.quality.enabled
    assert web.input.text_field == "body"
