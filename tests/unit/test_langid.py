"""The langid stage: the real lid.176 model, batched, equal to raw fastText predict."""

import json
from pathlib import Path

import fasttext
import numpy as np
import pyarrow as pa
import pytest

from raypipe.batch import reject, set_column
from raypipe.config import ConfigError, LangidConfig, QualityConfig
from raypipe.stages.langid import Langid, bundled_model
from raypipe.stages.quality import Quality
from tests.batches import document_batch

FIXTURES = Path(__file__).parents[1] / "fixtures"
TEXTS = {
    "en": "The weather was fine, so we walked along the river to the old mill.",
    "de": "Das Wetter war schön, also gingen wir am Fluss entlang zur alten Mühle.",
    "fr": "Il faisait beau, alors nous avons marché le long de la rivière jusqu'au moulin.",
    "short": "ok",
}


def mini_texts() -> list[str]:
    lines = (FIXTURES / "mini.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines]


def test_annotations_equal_raw_fasttext_predict():
    texts = mini_texts() + list(TEXTS.values())
    out = Langid(LangidConfig())(document_batch(texts))
    raw = fasttext.FastText._FastText(model_path=str(bundled_model()))
    for text, language, score in zip(
        texts, out["language"].to_pylist(), out["language_score"].to_numpy(), strict=True
    ):
        labels, scores = raw.predict(" ".join(text.splitlines()), k=1)
        confident = scores[0] >= LangidConfig().threshold
        assert language == (labels[0].removeprefix("__label__") if confident else "und")
        assert score == np.float32(scores[0])
    assert out["language_score"].type == pa.float32()
    # Annotating only: the default rejects nothing, whatever the language.
    assert out["reason"].null_count == len(texts)
    # lid.176 is unsure of the Swahili sample (0.56): undetermined, not a guess
    assert {"de", "hi", "th", "zh", "pl", "en", "und"} <= set(out["language"].to_pylist())


def test_a_language_the_model_does_not_know_is_undetermined_not_low_confidence_english():
    # Real Zulu (UDHR article 1): lid.176 has no Zulu and guesses English at a low score.
    zulu = (
        "Bonke abantu bazalwa bekhululekile belingana ngesithunzi nangamalungelo. Bonke "
        "abantu banikwe umcabango nonembeza futhi kufanele baphathane ngomoya wobunye."
    )
    out = Langid(LangidConfig())(document_batch([zulu, TEXTS["en"]]))
    assert out["language"].to_pylist() == ["und", "en"]
    assert out["language_score"][0].as_py() < LangidConfig().threshold
    assert out["reason"].null_count == 2  # annotating only: nothing rejected
    # so Gopher's English stop-word rule, scoped to English, leaves the Zulu page alone
    gopher = Quality(
        QualityConfig(
            heuristic={"enabled": False}, gopher_quality={"enabled": True, "min_words": 10}
        )
    )
    assert gopher(out)["reason"].null_count == 2
    guessed = set_column(out, "language", pa.array(["en", "en"]))  # lid.176's own guess
    assert gopher(guessed)["reason"].to_pylist() == ["gopher_quality:stop_words", None]


def test_keep_list_and_thresholds():
    texts = [TEXTS["en"], TEXTS["de"], TEXTS["fr"], TEXTS["short"]]
    out = Langid(LangidConfig(languages=["en", "de"], threshold=0.5))(document_batch(texts))
    reasons = out["reason"].to_pylist()
    assert reasons[:3] == [None, None, "language"]
    assert out["text"][2].as_py() == "" and out["stage"][2].as_py() == "langid"
    strict = Langid(LangidConfig(languages=["en", "de"], thresholds={"de": 1.0}))
    assert strict(document_batch(texts))["reason"].to_pylist()[:2] == [None, "language_score"]


def test_rejected_rows_are_not_annotated():
    batch = document_batch([TEXTS["en"], TEXTS["fr"]])
    batch = reject(batch, np.array([False, True]), "read", "too_large")
    out = Langid(LangidConfig(languages=["en"]))(batch)
    assert out["language"].to_pylist() == ["en", None]
    assert out["reason"].to_pylist() == [None, "too_large"]


def test_missing_model_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="langid.model_path"):
        Langid(LangidConfig(model_path=str(tmp_path / "lid.176.bin")))
    with pytest.raises(ValueError, match="thresholds"):
        LangidConfig(thresholds={"en": 1.5})


def test_the_character_set_heuristic_is_counted_beside_fasttext():
    texts = [
        "The committee will meet again next week to discuss the budget for the new school.",
        "Le comité se réunira la semaine prochaine pour discuter du budget de la nouvelle école.",
        "Der Ausschuss trifft sich nächste Woche, um das Budget der neuen Schule zu besprechen.",
        "Комитет соберётся на следующей неделе, чтобы обсудить бюджет новой школы.",
    ]
    out = Langid(LangidConfig(charset_check=0.9))(document_batch(texts))
    counts = {c: out[f"langid_{c}_not_en"].to_pylist() for c in ("charset", "fasttext", "both")}
    assert counts["fasttext"] == [0, 1, 1, 1]
    # French and German letters are 96% and 99% ASCII: the heuristic takes them for English
    assert counts["charset"] == [0, 0, 0, 1]
    assert counts["both"] == [0, 0, 0, 1]
    assert out["reason"].null_count == 4  # it rejects nothing
    assert "langid_charset_not_en" not in Langid(LangidConfig())(document_batch(texts)).schema.names
