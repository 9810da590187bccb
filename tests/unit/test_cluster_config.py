"""cluster.yaml is a valid Ray autoscaler config (the JSON schema shipped inside `ray`)."""

import json
from pathlib import Path

import jsonschema
import ray.autoscaler
import yaml

from raypipe.config import load_config

ROOT = Path(__file__).parents[2]


def test_cluster_yaml_matches_ray_schema():
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    config = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    jsonschema.validate(config, schema)
    workers = config["available_node_types"]["cpu_worker"]
    assert workers["min_workers"] == 0 and workers["max_workers"] > 0
    assert config["idle_timeout_minutes"] > 0
    assert any("pip install" in c and "raypipe" in c for c in config["setup_commands"])
    assert "object_spilling_config" in " ".join(config["head_start_ray_commands"])


def test_schema_validation_is_not_vacuous():
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    config = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    config["idle_timeout_minutes"] = "soon"
    try:
        jsonschema.validate(config, schema)
    except jsonschema.ValidationError:
        return
    raise AssertionError("a broken config passed the schema")


def test_every_shipped_config_is_valid():
    configs = [*ROOT.glob("jobs/configs/*.yaml"), *ROOT.glob("examples/*.yaml")]
    assert len(configs) >= 4
    for path in configs:
        load_config(path)  # raises ConfigError naming the key
    crawl = load_config(ROOT / "jobs/configs/crawl.yaml")
    assert crawl.ray.max_actors and crawl.output.path.startswith("s3://")
