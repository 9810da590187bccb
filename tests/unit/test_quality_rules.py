"""Every quality rule pinned at its threshold: the crafted text just inside keeps the
document, the one just outside rejects it with the rule's reason. Words are split by the
real (spaCy-rule) splitter."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raypipe.batch import CORE_SCHEMA
from raypipe.config import (
    C4Config,
    FineWebConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    HeuristicConfig,
    QualityConfig,
)
from raypipe.quality.c4 import clean_page
from raypipe.quality.fineweb import fineweb_reason
from raypipe.quality.gopher import quality_reason, repetition_reason
from raypipe.quality.heuristic import heuristic_reason, heuristic_reasons
from raypipe.quality.words import count_sentences, splitter
from raypipe.stages.quality import Quality

VOCAB = (  # noqa: SIM905 (a list literal would be 45 lines)
    "river stone garden window silver market candle harbor forest letter meadow bridge "
    "lantern valley orchard castle mirror pocket saddle timber velvet wander yellow basket "
    "carpet dinner engine fabric ginger hammer island jacket kettle ladder monkey needle "
    "office pepper quarry rabbit signal tunnel umpire violin walnut"
).split()


def words(n: int, offset: int = 0) -> list[str]:
    """n distinct-looking content words (cycling the vocabulary)."""
    return [VOCAB[(offset + i) % len(VOCAB)] for i in range(n)]


def prose(n: int) -> str:
    """n real words including the stop words 'the' and 'of', ending with a full stop."""
    return " ".join(["the", "of", *words(n - 2)]) + "."


def gq(text: str, **options) -> str | None:
    return quality_reason(text, splitter()(text), GopherQualityConfig(**options))


def gr(text: str, **options) -> str | None:
    return repetition_reason(text, splitter()(text), GopherRepetitionConfig(**options))


def fw(text: str, **options) -> str | None:
    return fineweb_reason(text, splitter()(text), FineWebConfig(**options))


def c4(text: str, **options) -> tuple[str | None, str]:
    return clean_page(text, splitter(), C4Config(**options))


# --- words -------------------------------------------------------------------------------


def test_words_split_like_spacy_english():
    text = "Don't stop-believing... U.S. e-mail a@b.com http://x.org/a?b=1 (yes) #tag"
    assert splitter()(text) == [
        "Do", "n't", "stop", "-", "believing", "...", "U.S.", "e", "-", "mail", "a@b.com",
        "http://x.org/a?b=1", "(", "yes", ")", "#", "tag",
    ]  # fmt: skip


def test_sentences_start_after_a_sentence_mark():
    assert count_sentences(splitter()('One. "Two?" Three! e.g. four 3.5 five')) == 4
    assert count_sentences([]) == 0


# --- heuristic ---------------------------------------------------------------------------


def test_heuristic_min_words():
    cfg = HeuristicConfig(min_words=5)
    assert heuristic_reason("a b c d", cfg) == "heuristic:min_words"
    assert heuristic_reason("a b c d e", cfg) is None


def test_heuristic_caps_and_symbols():
    cfg = HeuristicConfig(min_words=0)
    assert heuristic_reason("AB CD ef", cfg) == "heuristic:caps_words"  # 2/3 > 0.5
    assert heuristic_reason("AB cd", cfg) is None  # 1/2
    assert heuristic_reason("ab ~~~~", cfg) == "heuristic:symbols"  # 4/6 > 0.3
    assert heuristic_reason("abcdefg ~~~", cfg) is None  # 3/10


# Spaces of every kind, cased and uncased letters (titlecase Dž too), digits, underscores,
# symbols, then any character at all.
TRICKY = (
    " \t\n\x1c\x85\xa0\u2003\u3000aZ\u01c4\u01c5\u01c6éÉßΣσ東1٣_~.,!-\u200b"
    "\u093f\u0902\u0301ภาษาの"  # combining marks, Thai, kana
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(st.one_of(st.sampled_from(TRICKY), st.characters(blacklist_categories=["Cs"]))),
        max_size=8,
    ),
    st.integers(0, 4),
)
def test_batch_heuristic_equals_the_definition(texts, min_words):
    for caps, symbols, over in ((0.5, 0.3, "visible"), (0.0, 0.0, "all"), (1 / 3, 0.5, "all")):
        cfg = HeuristicConfig(
            min_words=min_words,
            max_caps_word_ratio=caps,
            max_symbol_ratio=symbols,
            symbol_ratio_of=over,
        )
        assert heuristic_reasons(texts, cfg) == [heuristic_reason(t, cfg) for t in texts]


def test_heuristic_symbol_share_of_the_whole_text():
    # 3 symbols, 9 visible characters, 10 in all: 0.33 of the visible ones, 0.3 of all
    text = "ab-cd -ef!"
    options = {"min_words": 0, "max_symbol_ratio": 0.31}
    assert heuristic_reason(text, HeuristicConfig(**options)) == "heuristic:symbols"
    assert heuristic_reason(text, HeuristicConfig(**options, symbol_ratio_of="all")) is None


def test_batch_heuristic_titlecase_letter_is_not_shouting():
    cfg = HeuristicConfig(min_words=0, max_caps_word_ratio=0.0)
    texts = ["A\u01c5", "AB", "\u01c5"]  # str.isupper: False, True, False
    assert heuristic_reasons(texts, cfg) == [None, "heuristic:caps_words", None]


HINDI = "भारत एक विशाल देश है जिसकी संस्कृति बहुत पुरानी है और जहाँ अनेक भाषाएँ बोली जाती हैं। "
TAMIL = "தமிழ் மொழி உலகின் மிகப் பழமையான மொழிகளில் ஒன்றாகும் என்று பலர் கருதுகின்றனர். "
CHINESE = "我们今天去北京看长城，天气很好，大家都很高兴。"  # 11 ICU words, 1 by whitespace
JAPANESE = "東京は日本の首都で、多くの人が住んでいます。"
THAI = "ภาษาไทยเป็นภาษาที่สวยงามและมีประวัติศาสตร์ยาวนาน "


@pytest.mark.parametrize("text", [HINDI * 5, TAMIL * 5, CHINESE * 6, JAPANESE * 8, THAI * 8])
def test_heuristic_keeps_prose_of_every_script(text):
    """Vowel signs are letters' parts, not symbols; unspaced scripts have words too."""
    cfg = HeuristicConfig()
    assert heuristic_reason(text, cfg) is None
    assert heuristic_reasons([text], cfg) == [None]


def test_heuristic_counts_unspaced_words_with_icu():
    cfg = HeuristicConfig(min_words=12)
    assert heuristic_reasons([CHINESE, CHINESE * 2], cfg) == ["heuristic:min_words", None]
    junk = "★☆✦✧ ★☆✦✧ " * 30 + CHINESE * 6  # symbols are still symbols next to Han
    assert heuristic_reasons([junk], HeuristicConfig()) == ["heuristic:symbols"]


# --- gopher_quality ----------------------------------------------------------------------


def test_gopher_min_words_does_not_count_symbols():
    assert gq(prose(49) + " - , ;") == "gopher_quality:min_words"
    assert gq(prose(50)) is None


def test_gopher_max_words():
    assert gq(prose(61), max_words=60) == "gopher_quality:max_words"
    assert gq(prose(60), max_words=60) is None


def test_gopher_mean_word_length():
    # "the" "of" + 58 words: (5 + 3*57 + 4) / 60 = 3.0 keeps, (5 + 3*58) / 60 = 2.98 does not
    assert gq("the of " + "abc " * 57 + "abcd") is None
    assert gq("the of " + "abc " * 58) == "gopher_quality:mean_word_length"
    # (5 + 10*43 + 11*15) / 60 = 10.0 keeps, one more 11-letter word makes 10.02
    ten, eleven = "x" * 10, "y" * 11
    assert gq("the of " + f"{ten} " * 43 + f"{eleven} " * 15) is None
    assert gq("the of " + f"{ten} " * 42 + f"{eleven} " * 16) == "gopher_quality:mean_word_length"


def test_gopher_hash_ratio():
    # '#' is a word of its own: 6 / (50 + 6) = 0.107 > 0.1, 5 / 55 = 0.091
    assert gq(prose(50) + " #" * 6) == "gopher_quality:hash_ratio"
    assert gq(prose(50) + " #" * 5) is None


def test_gopher_ellipsis_ratio():
    assert gq("… " * 6 + prose(50)) == "gopher_quality:ellipsis_ratio"
    assert gq("… " * 5 + prose(50)) is None


def lines_of(n: int, prefix: str = "", suffix: str = ".") -> list[str]:
    return [f"{prefix}the {' '.join(words(8, offset=8 * i))} of it{suffix}" for i in range(n)]


def test_gopher_bullet_lines():
    plain = lines_of(1)
    assert gq("\n".join(lines_of(10, "• "))) == "gopher_quality:bullet_lines"
    assert gq("\n".join(lines_of(9, "- ") + plain)) is None  # 9/10 is not above 0.9


def test_gopher_ellipsis_lines():
    text = "\n".join(lines_of(4, suffix="...") + lines_of(6))
    assert gq(text) == "gopher_quality:ellipsis_lines"  # 4/10 > 0.3
    assert gq("\n".join(lines_of(3, suffix="...") + lines_of(7))) is None


def test_gopher_alpha_words():
    # numbers are words without a letter, and so is the full stop closing prose(49):
    # 49 / (50 + 12) = 0.790 < 0.8, 49 / (50 + 11) = 0.803
    assert gq(prose(49) + " 123" * 12) == "gopher_quality:alpha_words"
    assert gq(prose(49) + " 123" * 11) is None


def test_gopher_alpha_words_of_words_leaves_punctuation_out():
    # Dialogue: 60 words, a full stop and 20 quotation marks and dashes, tokens of their
    # own. As written 60 / 81 = 0.74 rejects; over words only, 60 / 60 keeps.
    dialogue = prose(60) + " “ —" * 10
    assert gq(dialogue) == "gopher_quality:alpha_words"
    assert gq(dialogue, alpha_words_of="words") is None
    # numbers are still words without a letter: 60 / 76 = 0.79
    assert gq(prose(60) + " 123" * 16, alpha_words_of="words") == "gopher_quality:alpha_words"


def test_gopher_stop_words_are_distinct_and_case_sensitive():
    body = " ".join(words(60))
    assert gq(f"the {body} the") == "gopher_quality:stop_words"
    assert gq(f"The {body} Of") == "gopher_quality:stop_words"
    assert gq(f"the {body} of") is None


# --- gopher_repetition --------------------------------------------------------------------


def unique_words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i:05d}" for i in range(start, start + n))


def test_repetition_duplicate_paragraphs():
    unique = [unique_words(40, 100 * i) for i in range(7)]
    # 4 copies of "ok." are 3 repeats: 3 of 10 is not above 0.3, 4 of 11 is
    assert gr("\n\n".join(unique[:6] + ["ok."] * 5)) == "gopher_repetition:dup_para_frac"
    assert gr("\n\n".join(unique[:6] + ["ok."] * 4)) is None


NO_NGRAMS = {"top_ngram_char_frac": {}, "dup_ngram_char_frac": {}}


def repeated_part_texts(separator: str) -> tuple[str, str]:
    """Two texts whose one repeated part holds just under and just over 20% of the
    characters (8 unique parts, then one part of k words twice)."""
    unique = [unique_words(10, 100 * i) for i in range(8)]

    def text(k: int) -> str:
        part = unique_words(k, 5000)
        return separator.join([*unique, part, part])

    def share(k: int) -> float:
        return len(unique_words(k, 5000)) / len(text(k))

    k = next(k for k in range(1, 100) if share(k) > 0.2)
    return text(k - 1), text(k)


def test_repetition_duplicate_paragraph_characters():
    under, over = repeated_part_texts("\n\n")
    assert gr(under, **NO_NGRAMS) is None
    assert gr(over, **NO_NGRAMS) == "gopher_repetition:dup_para_char_frac"


def test_repetition_duplicate_lines():
    unique = [unique_words(40, 100 * i) for i in range(7)]
    assert gr("\n".join(unique[:6] + ["ok"] * 5)) == "gopher_repetition:dup_line_frac"
    assert gr("\n".join(unique[:6] + ["ok"] * 4)) is None


def test_repetition_duplicate_line_characters():
    under, over = repeated_part_texts("\n")
    assert gr(under, **NO_NGRAMS) is None
    assert gr(over, **NO_NGRAMS) == "gopher_repetition:dup_line_char_frac"


def test_repetition_top_ngram():
    # "ab cd" (5 characters) n times among unique words: 5n / len(text)
    def text(n: int) -> str:
        return (
            unique_words(40) + " " + " ".join(f"ab cd {unique_words(1, 900 + i)}" for i in range(n))
        )

    def share(n: int) -> float:
        return 5 * n / len(text(n))

    # find the smallest repeat count past 0.2 and check both sides of it
    n = next(n for n in range(1, 200) if share(n) > 0.2)
    assert gr(text(n - 1)) is None
    assert gr(text(n)) == "gopher_repetition:top_2_gram"


def test_repetition_top_ngram_ties_go_to_the_first_seen():
    # "x y" and "longword1 longword2" both occur 9 times; the one seen first counts:
    # 9 x 3 characters stay under the threshold, 9 x 19 characters go over it
    def text(first: str, second: str) -> str:
        grams = [first] * 9 + [second] * 9
        return " ".join(f"{gram} {unique_words(1, 900 + i)}" for i, gram in enumerate(grams))

    x_first, long_first = text("x y", "longword1 longword2"), text("longword1 longword2", "x y")
    threshold = {"top_ngram_char_frac": {2: 100 / len(x_first)}, "dup_ngram_char_frac": {}}
    assert gr(x_first, **threshold) is None
    assert gr(long_first, **threshold) == "gopher_repetition:top_2_gram"


def test_repetition_duplicated_ngrams_count_each_repeat_once():
    base = unique_words(200)  # 200 x 6 characters + spaces
    phrase = unique_words(5, 9000)  # a 5-gram of 5 x 6 = 30 characters (no spaces)

    # k repeats after the first: 30k / len(text); 0.15 crossed between k and k+1
    def text(k: int) -> str:
        return " ".join([base, *[phrase] * (k + 1)])

    k = next(k for k in range(1, 100) if 30 * k / len(text(k)) > 0.15)
    options = {"top_ngram_char_frac": {}, "dup_ngram_char_frac": {5: 0.15}}
    assert gr(text(k - 1), **options) is None
    assert gr(text(k), **options) == "gopher_repetition:dup_5_gram"


def test_repetition_overlapping_repeats_jump_past_the_match():
    # "a a a a a a a" : 5-grams at 0,1,2 are equal; after the repeat at 1, scanning resumes at
    # 6, so only one repeat (5 characters) is counted: 5 / 13 = 0.38
    assert (
        gr("a a a a a a a", **{"dup_ngram_char_frac": {5: 0.39}, "top_ngram_char_frac": {}}) is None
    )
    assert gr("a a a a a a a", **{"dup_ngram_char_frac": {5: 0.38}, "top_ngram_char_frac": {}}) == (
        "gopher_repetition:dup_5_gram"
    )


def test_repetition_empty():
    assert gr("") == "gopher_repetition:empty"


# --- c4 ----------------------------------------------------------------------------------

SENTENCE = "The {} walked to the old market."


def c4_lines(n: int) -> list[str]:
    return [SENTENCE.format(w) for w in words(n)]


def test_c4_keeps_only_sentence_lines():
    page = "\n".join(
        [
            "Menu",  # no terminal punctuation
            *c4_lines(3),
            "Too short.",  # fewer than 3 words
            "Please enable JavaScript to view this page.",
            "We use cookies to improve this site.",
            "Read more...",
            "A citation follows here.[1]",
            f"A {'x' * 1001} word.",
            *c4_lines(2),
        ]
    )
    reason, kept = c4(page)
    assert reason is None
    assert kept.splitlines() == [*c4_lines(3), "A citation follows here.", *c4_lines(2)]


def test_c4_min_sentences():
    assert c4("\n".join(c4_lines(4)))[0] == "c4:min_sentences"
    assert c4("\n".join(c4_lines(5)))[0] is None
    # sentences are counted inside lines, not only lines
    assert (
        c4("One two three. Four five six. Seven eight nine. Ten.\nAnd the last one here.")[0]
        is None
    )


def test_c4_can_keep_lines_without_terminal_punctuation():
    # FineWeb runs C4 with filter_no_terminal_punct off: "Menu" goes (one word), a list
    # item of three words without a stop stays
    page = "\n".join(["Menu", "Home and garden", *c4_lines(5)])
    assert c4(page, filter_no_terminal_punct=False)[1].splitlines()[0] == "Home and garden"
    assert c4(page)[1].splitlines()[0] == c4_lines(1)[0]


def test_c4_page_rules():
    lines = c4_lines(5)
    assert c4("\n".join([*lines, "Lorem ipsum dolor sit amet."]))[0] == "c4:lorem_ipsum"
    assert c4("\n".join([*lines, "function f() { return 1; }."]))[0] == "c4:curly_bracket"
    # only lines that survived the line rules can drop the page
    assert c4("\n".join([*lines, "int main() {"]))[0] is None


# --- fineweb -----------------------------------------------------------------------------


def fw_lines(n: int, end: str = ".") -> list[str]:
    return [f"the {' '.join(words(7, 7 * i))} of it{end}" for i in range(n)]


def test_fineweb_line_punct_ratio():
    # 3 of 25 lines end in a full stop: 0.12 is not below 0.12; 2 of 25 is
    assert fw("\n".join(fw_lines(3) + fw_lines(22, end=" and"))) is None
    assert fw("\n".join(fw_lines(2) + fw_lines(23, end=" and"))) == "fineweb:line_punct_ratio"


def test_fineweb_short_line_ratio():
    long, short = fw_lines(10), ["A short line."] * 1
    shorts = [f"{w} here." for w in words(30)]
    # 20 short of 30 = 0.667 <= 0.67; 21 of 31 = 0.677
    assert fw("\n".join(long + shorts[:20])) is None
    assert fw("\n".join(long + shorts[:21])) == "fineweb:short_line_ratio"
    assert short  # a line of 13 characters is short


def test_fineweb_char_dup_ratio():
    lines = fw_lines(20)
    repeated = lines[0]
    text_ok = "\n".join([*lines, repeated])  # one repeat of ~60 characters among ~1260
    share = len(repeated) / (len(text_ok) - text_ok.count("\n"))
    assert fw(text_ok, max_dup_line_char_ratio=share) is None
    assert fw(text_ok, max_dup_line_char_ratio=share - 1e-6) == "fineweb:char_dup_ratio"


def test_fineweb_list_ratio():
    # words of "a b." are 3 ("a", "b", "."): 1 line break per 3 words is above 0.3
    lists = "\n".join(f"{w} {v}." for w, v in zip(words(40), words(40, 1), strict=True))
    assert fw(lists, max_short_line_ratio=1) == "fineweb:list_ratio"
    assert fw(lists, max_short_line_ratio=1, max_newline_word_ratio=0.34) is None


def test_fineweb_empty():
    assert fw("\n \n") == "fineweb:empty"


# FineWeb v1's code drops a page *at* each limit and counts blank lines; FineWeb-2's does
# neither. Each limit is probed at limit - e, limit and limit + e of its share.
@pytest.mark.parametrize(
    ("edition", "at_limit"), [("fineweb", "fineweb:line_punct_ratio"), ("fineweb-2", None)]
)
def test_fineweb_line_punct_limit(edition, at_limit):
    page = "\n".join(fw_lines(3) + fw_lines(22, end=" and"))  # 3 of 25 = 0.12
    for limit, expected in ((0.12 - 1e-9, None), (0.12, at_limit), (0.12 + 1e-9, None)):
        reason = fw(page, edition=edition, min_line_punct_ratio=limit)
        assert reason == (expected or ("fineweb:line_punct_ratio" if limit > 0.12 else None))


@pytest.mark.parametrize(
    ("edition", "at_limit"), [("fineweb", "fineweb:short_line_ratio"), ("fineweb-2", None)]
)
def test_fineweb_short_line_limit(edition, at_limit):
    shorts = [f"{w} here." for w in words(20)]
    page = "\n".join(fw_lines(10) + shorts)  # 20 short of 30
    share = 20 / 30
    for limit, expected in (
        (share + 1e-9, None),
        (share, at_limit),
        (share - 1e-9, "fineweb:short_line_ratio"),
    ):
        assert fw(page, edition=edition, max_short_line_ratio=limit) == expected
    # a line of exactly short_line_length characters is short, one more is not
    thirty = "x" * 29 + "."
    assert fw("\n".join([thirty] * 3), edition=edition, max_short_line_ratio=0.99) == (
        "fineweb:short_line_ratio"
    )
    assert fw("\n".join(["x" * 30 + "."] * 3), edition=edition, max_short_line_ratio=0.99) != (
        "fineweb:short_line_ratio"
    )


@pytest.mark.parametrize(
    ("edition", "at_limit"), [("fineweb", "fineweb:char_dup_ratio"), ("fineweb-2", None)]
)
def test_fineweb_char_dup_limit(edition, at_limit):
    lines = fw_lines(20)
    page = "\n".join([*lines, lines[0]])
    share = len(lines[0]) / (len(page) - page.count("\n"))
    for limit, expected in (
        (share + 1e-9, None),
        (share, at_limit),
        (share - 1e-9, "fineweb:char_dup_ratio"),
    ):
        assert fw(page, edition=edition, max_dup_line_char_ratio=limit) == expected


def test_fineweb_v1_counts_blank_lines_and_ascii_stops():
    # 5 sentence lines and 4 blank ones: v1 sees 5 of 9 end in a stop, v2 sees 5 of 5
    page = "\n\n".join(fw_lines(5))
    assert fw(page, edition="fineweb", min_line_punct_ratio=0.6) == "fineweb:line_punct_ratio"
    assert fw(page, edition="fineweb-2", min_line_punct_ratio=0.6) is None
    # a Devanagari danda ends a sentence line for FineWeb-2 only
    hindi = "\n".join(["यह एक वाक्य है।"] * 4 + ["x" * 40 + " and"])
    options = {"max_short_line_ratio": 1, "max_dup_line_char_ratio": 1}
    assert fw(hindi, edition="fineweb", **options) == "fineweb:line_punct_ratio"
    assert fw(hindi, edition="fineweb-2", **options) is None


# --- the stage ---------------------------------------------------------------------------


def batch(texts: list[str], languages: list[str | None] | None = None) -> pa.Table:
    n = len(texts)
    table = pa.table(
        {
            "uid": pa.array(range(n), pa.int64()),
            "id": [str(i) for i in range(n)],
            "source": ["t"] * n,
            "text": texts,
            "stage": pa.nulls(n, pa.string()),
            "reason": pa.nulls(n, pa.string()),
        },
        schema=CORE_SCHEMA,
    )
    return table if languages is None else table.append_column("language", pa.array(languages))


ALL = {
    "heuristic": {"enabled": False},
    "gopher_repetition": {"enabled": True},
    "gopher_quality": {"enabled": True},
    "c4": {"enabled": True},
    "fineweb": {"enabled": True},
}


def test_stage_defaults_run_only_the_heuristic():
    cfg = QualityConfig()
    assert cfg.heuristic.enabled
    assert not any(
        section.enabled
        for section in (cfg.gopher_quality, cfg.gopher_repetition, cfg.c4, cfg.fineweb)
    )
    out = Quality(cfg)(batch(["too short", prose(60)]))
    assert out["reason"].to_pylist() == ["heuristic:min_words", None]


GOOD_PAGE = """The river rose slowly through the night, and by morning the lower fields were under water.
Farmers moved their cattle to the ridge, where the old stone walls still stood against the wind.
Nobody in the valley could remember a flood of that size since the winter of the great storm.
Children watched from the church steps as boats drifted past the bakery and the post office.
By noon the rain had stopped, but the water kept climbing toward the doors of the mill.
An engineer from the city arrived with maps that showed where the embankment might give way.
The mayor asked every family with a cart to help carry sandbags to the weakest part of the bank.
When the sun finally set, the town was tired and wet, yet not a single house had been lost."""


def test_stage_first_failing_rule_names_the_reason_and_c4_cleans_text():
    repeated = "\n".join([GOOD_PAGE.splitlines()[0]] * 8)
    out = Quality(QualityConfig(**ALL))(batch([GOOD_PAGE + "\nMenu", repeated, "x " * 60]))
    assert out["reason"].to_pylist() == [
        None,
        "gopher_repetition:dup_line_frac",
        "gopher_repetition:top_2_gram",
    ]
    assert out["text"].to_pylist() == [GOOD_PAGE, "", ""]  # the "Menu" line is gone
    assert out["stage"].to_pylist() == [None, "quality", "quality"]


def test_stage_english_rules_skip_other_languages():
    text = "x " * 60
    out = Quality(QualityConfig(**ALL))(batch([text, text, text], ["de", "en", None]))
    assert out["reason"].to_pylist() == [
        None,
        "gopher_repetition:top_2_gram",
        "gopher_repetition:top_2_gram",
    ]
    every = {**ALL, "gopher_repetition": {"enabled": True, "languages": []}}
    out = Quality(QualityConfig(**every))(batch([text], ["de"]))
    assert out["reason"].to_pylist() == ["gopher_repetition:top_2_gram"]


@pytest.mark.parametrize(
    "options",
    [
        {"gopher_repetition": {"top_ngram_char_frac": {1: 0.1}}},
        {"gopher_quality": {"min_alpha_words": 1.5}},
        {"fineweb": {"unknown": 1}},
    ],
)
def test_config_rejects_bad_values(options):
    with pytest.raises(ValueError):
        QualityConfig(**options)
