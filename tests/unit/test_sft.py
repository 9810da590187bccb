"""raypipe sft: every schema error and rule on the fixtures, dedup, conversion, report, CLI."""

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from raypipe.cli import app
from raypipe.config import ConfigError
from raypipe.dedup.minhash import CHUNK_SHINGLES
from raypipe.sft import dedup
from raypipe.sft.clean import judge
from raypipe.sft.config import load_sft_config, reference_table
from raypipe.sft.convert import ConversionError, chat_to_instruction, instruction_to_chat
from raypipe.sft.golden import distances
from raypipe.sft.report import build
from raypipe.sft.rules import Rules
from raypipe.sft.schema import example, read_lines
from raypipe.sft.style import list_style, style_split, trailing_punctuation

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sft"
DOCS = Path(__file__).parents[2] / "docs" / "sft.md"
FORMATS = ("instruction", "chat", "preference")
EVERY_REASON = {
    "schema:invalid_json",
    "schema:not_an_object",
    "schema:missing_field",
    "schema:not_a_string",
    "schema:not_a_list",
    "schema:unknown_role",
    "schema:system_not_first",
    "schema:empty_conversation",
    "schema:not_alternating",
    "schema:no_final_assistant",
    "schema:chosen_equals_rejected",
    "empty_field",
    "answer_words:too_short",
    "answer_words:too_long",
    "code_fences",
    "refusal",
    "encoding",
    "placeholder",
    "duplicate:exact",
    "duplicate:near",
}


def _judged(fmt, **overrides):
    cfg = load_sft_config(None, {"format": fmt, **overrides})
    return judge(read_lines(FIXTURES / f"{fmt}.jsonl"), cfg)


def _expected(verdict):
    """The `expect` key of the line, or the reason a line that is no object must get."""
    try:
        record = json.loads(verdict.text)
    except json.JSONDecodeError:
        return "schema:invalid_json"
    return record.get("expect") if isinstance(record, dict) else "schema:not_an_object"


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_fixture_line_gets_its_expected_verdict(fmt):
    verdicts = _judged(fmt)
    assert verdicts, fmt
    for verdict in verdicts:
        assert verdict.reason == _expected(verdict), (verdict.line, verdict.problems)


def test_fixtures_cover_every_reason():
    seen = {_expected(v) for fmt in FORMATS for v in _judged(fmt)}
    assert seen - {None} == EVERY_REASON


def test_line_numbers_count_blank_lines_but_blank_lines_are_no_examples(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('\n{"instruction": "a"}\n\n  \n[1]\n', encoding="utf-8")
    verdicts = judge(read_lines(path), load_sft_config(None))
    assert [(v.line, v.reason) for v in verdicts] == [
        (2, "schema:missing_field"),
        (5, "schema:not_an_object"),
    ]


def test_invalid_utf8_is_an_encoding_problem_not_a_crash(tmp_path):
    good = json.loads((FIXTURES / "instruction.jsonl").read_text().splitlines()[0])
    line = json.dumps(good).encode().replace(b"sugar", b"sug\xff\xfer")
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(line + b"\n")
    [verdict] = judge(read_lines(path), load_sft_config(None))
    assert verdict.reason == "encoding"
    assert "U+FFFD" in verdict.problems[0][1]


def test_check_lists_every_problem_of_a_line():
    record = {"instruction": "Hi {{name}}", "output": "As an AI, ok."}
    problems = Rules(load_sft_config(None).rules)(example(1, record, "instruction"))
    assert [reason for reason, _ in problems] == [
        "answer_words:too_short",
        "refusal",
        "placeholder",
    ]


def _reasons(fmt, **overrides):
    return [v.reason for v in _judged(fmt, **overrides)]


@pytest.mark.parametrize(
    "switch, reason",
    [
        ("rules.empty_field.enabled", "empty_field"),
        ("rules.answer_words.enabled", "answer_words:too_short"),
        ("rules.code_fences.enabled", "code_fences"),
        ("rules.refusal.enabled", "refusal"),
        ("rules.encoding.enabled", "encoding"),
        ("rules.placeholder.enabled", "placeholder"),
        ("dedup.exact.enabled", "duplicate:exact"),
        ("dedup.near.enabled", "duplicate:near"),
    ],
)
def test_every_rule_can_be_switched_off(switch, reason):
    assert reason in _reasons("instruction")
    assert reason not in _reasons("instruction", **{switch: False})


def test_rule_options_change_verdicts():
    assert "answer_words:too_short" not in _reasons("instruction", **{"rules.answer_words.min": 1})
    assert "answer_words:too_long" not in _reasons(
        "instruction", **{"rules.answer_words.max": 5000}
    )
    only_spanish = {"rules.refusal.prefixes": ["lo siento"]}
    assert _reasons("instruction", **only_spanish).count("refusal") == 1
    only_jinja = {"rules.placeholder.patterns": [r"\{\{"]}
    assert _reasons("instruction", **only_jinja).count("placeholder") == 1


def test_a_stricter_near_threshold_keeps_the_near_copy():
    assert "duplicate:near" not in _reasons("instruction", **{"dedup.near.threshold": 0.95})


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "sft.yaml"
    bad.write_text("rules:\n  answer_words: {min: 50, max: 10}\n  refusl: {}\n")
    with pytest.raises(ConfigError) as error:
        load_sft_config(bad)
    assert "rules.answer_words: Value error, min must not exceed max" in str(error.value)
    assert "rules.refusl: unknown key" in str(error.value)
    with pytest.raises(ValueError, match="rules.placeholder.patterns"):
        Rules(load_sft_config(None, {"rules.placeholder.patterns": ["(unclosed"]}).rules)


def test_minhash_estimates_jaccard():
    estimates = []
    for vocabulary in range(8):  # one pair's estimate has sd 0.03; the mean of 8, 0.011
        words = [f"v{vocabulary}w{i}" for i in range(400)]
        a = " ".join(words[:200])
        b = " ".join(words[50:250])  # 148 of 198 shingles shared with a: J = 148 / 248
        sigs = dedup.signatures([a, b], num_perm=256, words=3)
        estimates.append((sigs[0] == sigs[1]).mean())
    assert abs(np.mean(estimates) - 148 / 248) < 0.04


def test_a_text_shorter_than_a_shingle_is_one_shingle():
    sigs = dedup.signatures(
        ["Hello there", "hello, THERE!", "hello there you", "there hello"], 64, 3
    )
    assert (sigs[0] == sigs[1]).all() and (sigs[0] != dedup._EMPTY).all()
    assert (sigs[0] != sigs[2]).mean() > 0.9 and (sigs[0] != sigs[3]).mean() > 0.9


def test_signatures_do_not_depend_on_batch_neighbours():
    rng = np.random.default_rng(0)
    texts = [" ".join(f"w{i}" for i in rng.integers(0, 3000, 600)) for _ in range(260)]
    together = dedup.signatures(texts, 256, 3)  # more shingles than one chunk holds
    assert sum(600 - 2 for _ in texts) > 2 * CHUNK_SHINGLES
    alone = np.concatenate([dedup.signatures([t], 256, 3) for t in texts[-3:]])
    np.testing.assert_array_equal(together[-3:], alone)


def test_text_without_words_is_nobodys_duplicate():
    sigs = dedup.signatures(["...", "!!!", "a b c d"], 64, 3)
    assert len(dedup.near_pairs(sigs, 0.5)) == 0


def test_near_pairs_finds_planted_copies_among_random_texts():
    rng = np.random.default_rng(1)
    texts = [" ".join(f"w{i}" for i in rng.integers(0, 5000, 60)) for _ in range(2000)]
    planted = {(i, 2000 + k) for k, i in enumerate(range(0, 2000, 100))}
    texts += [texts[i] + " one more" for i, _ in sorted(planted)]
    found = {tuple(p) for p in dedup.near_pairs(dedup.signatures(texts, 128, 3), 0.8).tolist()}
    assert found == planted


def test_keepers_are_the_first_of_each_cluster():
    pairs = np.array([[3, 5], [5, 1], [2, 4]])
    assert dedup.keepers(6, pairs).tolist() == [0, 1, 2, 1, 2, 1]


def test_exact_pairs_ignore_whitespace_only():
    assert dedup.exact_pairs(dedup.exact_keys(["a  b\n", "a b", "A b"])).tolist() == [[0, 1]]


def test_instruction_and_chat_convert_both_ways():
    record = {
        "id": 7,
        "system": "Be brief.",
        "instruction": "Add",
        "input": "2 and 3",
        "output": "5",
    }
    chat = instruction_to_chat(record)
    assert chat == {
        "id": 7,
        "conversations": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Add\n\n2 and 3"},
            {"role": "assistant", "content": "5"},
        ],
    }
    assert chat_to_instruction(chat) == {
        "id": 7,
        "system": "Be brief.",
        "instruction": "Add\n\n2 and 3",
        "output": "5",
    }
    longer = {"conversations": chat["conversations"] * 2}
    with pytest.raises(ConversionError, match="2 exchanges"):
        chat_to_instruction(longer)


def test_style_split_counts_conventions():
    answers = ["Done.", "- a\n- b", "* a\n1. b", "## Title\nText", "ok!"]
    split = style_split(answers)
    assert split["trailing punctuation"] == {"period": 1, "none": 3, "exclamation": 1}
    assert split["headers"]["markdown headers"] == 1
    assert list_style("- a\n- b") == "'-' bullets"
    assert list_style("* a\n1. b") == "mixed lists"
    assert trailing_punctuation("see:\n```\nx\n```") == "code"


def test_golden_distance_ranks_the_odd_example_furthest():
    golden = [
        v.example for v in judge(read_lines(FIXTURES / "golden.jsonl"), load_sft_config(None))
    ]
    near = example(
        1, {"instruction": "What is rain?", "output": golden[0].answers[0]}, "instruction"
    )
    odd = example(
        2, {"instruction": "List", "output": "# Head\n\n- a\n- b\n\n```\nx\n```"}, "instruction"
    )
    close, far = distances([near, odd], golden)
    assert close < 1 < far


def test_report_counts_reasons_and_lengths():
    report = build(_judged("instruction"))
    assert report["examples"] == 22
    assert report["kept"] == 5
    assert sum(report["rejected"].values()) == 17
    assert report["rejected"]["refusal"] == 3
    assert report["answer_words"]["min"] >= 20
    assert report["style"]["opening"] == {"capital letter": 5}


runner = CliRunner()


def test_cli_check_prints_line_numbered_problems_and_fails():
    path = FIXTURES / "instruction.jsonl"
    result = runner.invoke(app, ["sft", "check", str(path), "--format", "instruction"])
    assert result.exit_code == 1
    assert f"{path}:7: answer_words:too_short: answer has 1 word(s), fewer than 20" in result.output
    assert f"{path}:17: duplicate:exact: duplicate of line 1" in result.output
    assert "| refusal | 3 |" in result.output


def test_cli_clean_accounts_for_every_line(tmp_path):
    out = tmp_path / "clean.jsonl"
    golden = tmp_path / "golden.jsonl"
    rows = [
        instruction_to_chat(json.loads(x))
        for x in (FIXTURES / "golden.jsonl").read_text().splitlines()
    ]
    golden.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = tmp_path / "sft.yaml"
    config.write_text(f"golden: {{path: {golden}, show: 2}}\n")
    result = runner.invoke(
        app,
        [
            "sft",
            "clean",
            str(FIXTURES / "chat.jsonl"),
            "-f",
            "chat",
            "-o",
            str(out),
            "-c",
            str(config),
        ],
    )
    assert result.exit_code == 0, result.output
    kept = out.read_text().splitlines()
    rejects = [
        json.loads(line) for line in (tmp_path / "clean.rejects.jsonl").read_text().splitlines()
    ]
    report = json.loads((tmp_path / "clean.report.json").read_text())
    assert len(kept) == report["kept"] == 2
    assert len(rejects) == sum(report["rejected"].values()) == 15
    assert all(json.loads(row["text"])["expect"] == row["reason"] for row in rejects)
    # Line 2 is two exchanges long: its answer is twice a golden one.
    assert [row["line"] for row in report["furthest_from_golden"]] == [2, 1]


def test_a_golden_set_in_another_format_is_a_clear_error(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text(f"golden: {{path: {FIXTURES / 'golden.jsonl'}}}\n")
    result = runner.invoke(
        app, ["sft", "check", str(FIXTURES / "chat.jsonl"), "-f", "chat", "-c", str(config)]
    )
    assert result.exit_code == 2
    assert "the golden set has no valid chat example" in result.output


def test_cli_golden_scoring_is_not_silently_dropped_on_ray(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text(f"golden: {{path: {FIXTURES / 'golden.jsonl'}}}\n")
    source = str(FIXTURES / "instruction.jsonl")
    result = runner.invoke(
        app, ["sft", "clean", source, "-o", str(tmp_path / "o.jsonl"), "-c", str(config), "--ray"]
    )
    assert result.exit_code == 2
    assert "golden.path needs the in-process run" in result.output


def test_cli_convert_round_trip(tmp_path):
    chat, back = tmp_path / "chat.jsonl", tmp_path / "back.jsonl"
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join((FIXTURES / "golden.jsonl").read_text().splitlines()) + "\n")
    assert (
        runner.invoke(
            app, ["sft", "convert", str(source), "--to", "chat", "-o", str(chat)]
        ).exit_code
        == 0
    )
    assert (
        runner.invoke(
            app, ["sft", "convert", str(chat), "--to", "instruction", "-o", str(back)]
        ).exit_code
        == 0
    )
    assert [json.loads(x) for x in back.read_text().splitlines()] == [
        json.loads(x) for x in source.read_text().splitlines()
    ]


def test_cli_convert_names_lines_it_cannot_convert(tmp_path):
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["sft", "convert", str(FIXTURES / "chat.jsonl"), "--to", "instruction", "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "chat.jsonl:2: convert:no_equivalent: a chat of 2 exchanges" in result.output
    assert "chat.jsonl:4: schema:not_a_list" in result.output


def test_cli_errors_are_one_clear_line(tmp_path):
    result = runner.invoke(app, ["sft", "check", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "none.jsonl: no such file" in result.output
    result = runner.invoke(app, ["sft", "check", str(FIXTURES / "chat.jsonl"), "-f", "dialog"])
    assert result.exit_code == 2
    assert "format: Input should be 'instruction', 'chat' or 'preference'" in result.output


def test_docs_reference_table_is_current():
    section = re.search(
        r"<!-- reference:start -->\n(.*?)\n<!-- reference:end -->", DOCS.read_text(), re.S
    )
    assert section, "docs/sft.md lacks the reference markers"
    assert section.group(1) == reference_table(), "run `python scripts/update_readme.py`"


def test_judge_batch_gives_the_ray_job_what_judge_uses():
    from raypipe.sft.job import _matrix, judge_batch

    lines = list(read_lines(FIXTURES / "instruction.jsonl"))
    batch = pa.table({"line": [n for n, _ in lines], "text": [t for _, t in lines]})
    cfg = load_sft_config(None)
    judged = judge_batch(batch, cfg)
    in_process = judge(
        lines, load_sft_config(None, {"dedup.exact.enabled": False, "dedup.near.enabled": False})
    )
    assert judged["reason"].to_pylist() == [v.reason for v in in_process]
    alive = [i for i, v in enumerate(in_process) if not v.problems]
    texts = [in_process[i].example.text for i in alive]
    sigs = _matrix(judged["signature"])
    np.testing.assert_array_equal(sigs[alive], dedup.signatures(texts, 128, 3))
    assert [judged["key"][i].as_py() for i in alive] == dedup.exact_keys(texts)
