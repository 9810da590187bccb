"""A user's filter from YAML, in an actor pool of its own, on a real local Ray."""

import json

import pytest

from raypipe.config import ConfigError
from tests.integration.test_pipeline import assert_accounted, inputs, run

pytestmark = pytest.mark.ray

TABLE = "\n".join(f"| {i} | {i * i} | {i**3} |" for i in range(40))


def test_a_user_filter_runs_in_its_own_pool_and_is_accounted(local_ray, mini_corpus, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = inputs(mini_corpus) + [{"id": f"table{i}", "text": TABLE + f"\n{i}"} for i in range(3)]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    stage = {
        "use": "examples.filters.no_tables:NoTables",
        "after": "pii",
        "resources": {"num_cpus": 0},  # a pool of its own beside the reader and built-ins
    }
    manifest = run(corpus, tmp_path / "out", stages=[stage], **{"quality.enabled": False})
    assert manifest["rejected"]["no_tables:table_lines"] == 3
    # the filter's declared counter, summed over the documents it saw
    assert manifest["counters"]["no_tables"]["table_lines"] >= 3 * 40
    assert manifest["documents_in"] == len(rows)
    assert_accounted(manifest, tmp_path / "out")


def test_pools_that_cannot_all_hold_an_actor_are_a_config_error(local_ray, mini_corpus, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in inputs(mini_corpus)))
    stage = {"use": "examples.filters.no_tables:NoTables", "after": "quality"}
    stage["resources"] = {"num_cpus": 1}  # its own pool beside the built-ins: 3 CPUs on 2
    with pytest.raises(ConfigError, match="2 actor pools and a reader holding 3 CPUs"):
        run(corpus, tmp_path / "out", stages=[stage])


def test_a_gpu_stage_on_a_cluster_without_gpus_is_a_config_error(local_ray, mini_corpus, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in inputs(mini_corpus)))
    stage = {"use": "examples.filters.no_tables:NoTables", "after": "pii"}
    stage["resources"] = {"num_cpus": 0, "num_gpus": 1}
    with pytest.raises(ConfigError, match="num_gpus=1, but the cluster has 0 GPUs"):
        run(corpus, tmp_path / "out", stages=[stage])
