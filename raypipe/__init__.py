"""raypipe: raw text to training-ready token shards on Ray Data."""

from raypipe.config import ConfigError, PipelineConfig, load_config

__all__ = ["ConfigError", "Pipeline", "PipelineConfig", "load_config"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # `from raypipe import Pipeline` without making every `import raypipe` load Ray Data.
    if name == "Pipeline":
        from raypipe.pipeline import Pipeline

        return Pipeline
    raise AttributeError(f"module 'raypipe' has no attribute {name!r}")
