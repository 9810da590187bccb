"""Entrypoint for `ray job submit`: run one pipeline config on the cluster.

    ray job submit --working-dir . -- python jobs/pipeline.py --config jobs/configs/sample.yaml

Inside a job Ray sets RAY_ADDRESS, so the pipeline joins the cluster it was submitted to.
"""

from __future__ import annotations

import argparse
import json
import sys

from raypipe.config import ConfigError
from raypipe.io.storage import StorageError
from raypipe.pipeline import Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="pipeline YAML config")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        manifest = Pipeline.from_yaml(args.config, args.set).run()
    except (ConfigError, StorageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary = {k: manifest.get(k) for k in ("documents_in", "documents_out", "tokens", "rejected")}
    print(json.dumps({"output": manifest["config"]["output"]["path"], **summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
