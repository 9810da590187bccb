"""Named recipes: each resolves to a valid config holding exactly its settings, and the
user's own keys win over it."""

import pytest

from raypipe import recipes
from raypipe.config import ConfigError, PipelineConfig, build_config, reference_table

BASE = {"input": {"paths": ["corpus.jsonl"]}}
PUBLISHED = {"lesson", "fineweb", "c4", "gopher", "refinedweb", "pythia_dedup", "production"}


def value_at(cfg, key: str):
    node = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


def test_the_published_recipes_ship():
    assert set(recipes.names()) >= PUBLISHED


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_recipe_sets_every_value_it_cites(name):
    recipe = recipes.load(name)
    cfg = build_config({**BASE, "recipe": name})
    assert cfg.recipe == name
    assert recipe.settings and recipe.title
    for key, setting in recipe.settings.items():
        assert setting.cite in recipe.references
        assert value_at(cfg, key) == setting.value, key


def test_the_users_keys_and_set_win_over_the_recipe():
    data = {**BASE, "recipe": "fineweb", "quality": {"fineweb": {"max_dup_line_char_ratio": 0.1}}}
    cfg = build_config(data, ["dedup.near.bands=20"])
    assert cfg.quality.fineweb.max_dup_line_char_ratio == 0.1  # the config's own key
    assert cfg.dedup.near.bands == 20  # --set
    assert cfg.dedup.near.rows == 8 and cfg.quality.fineweb.edition == "fineweb"  # the recipe
    # a recipe named by --set (as --recipe does) applies too
    assert build_config(BASE, ["recipe=c4"]).quality.c4.min_words_per_line == 5


def test_the_default_is_the_production_recipe_and_null_means_none():
    cfg = build_config(BASE)
    assert cfg.recipe == "production" and cfg.dedup.near.enabled and cfg.pii.enabled
    assert cfg == build_config({**BASE, "recipe": "production"})
    # however the config is built, and a resolved config read back is the same config
    assert PipelineConfig.model_validate(BASE) == cfg
    assert PipelineConfig.model_validate(cfg.model_dump(mode="json")) == cfg
    bare = build_config({**BASE, "recipe": None})
    assert bare.recipe is None and not bare.dedup.near.enabled and not bare.pii.enabled
    assert bare == PipelineConfig.model_validate({**BASE, "recipe": None})


def test_the_production_recipe_keeps_every_language():
    # Rejecting below a language score drops whole languages lid.176 does not know.
    cfg = build_config(BASE)
    assert cfg.langid.enabled and cfg.langid.languages == []


def test_an_unknown_recipe_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"recipe: unknown recipe 'finweb'; recipes: .*fineweb"):
        build_config({**BASE, "recipe": "finweb"})


def test_the_options_table_shows_a_recipes_values_and_sources():
    table = reference_table("fineweb")
    assert "| `quality.fineweb.max_dup_line_char_ratio` | **`0.01`** [code] |" in table
    assert "| `pack.seq_len` | `2048` |" in table  # options the recipe leaves alone
    assert "- [code] datatrove examples/fineweb.py, commit 05194d3" in table
    assert "Where raypipe differs:" in table
    with pytest.raises(ConfigError, match="unknown recipe"):
        reference_table("nope")
