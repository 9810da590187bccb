"""raypipe: raw text to training-ready token shards on Ray Data."""

from raypipe.config import ConfigError, PipelineConfig, load_config

__all__ = ["ConfigError", "PipelineConfig", "load_config"]
__version__ = "0.1.0"
