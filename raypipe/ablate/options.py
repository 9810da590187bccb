"""Options of `raypipe ablate`, with their defaults and bounds (docs/ablate.md lists them)."""

from __future__ import annotations

from pydantic import Field, ValidationError, field_validator, model_validator

from raypipe.ablate.variants import DEFAULT, VARIANTS
from raypipe.config import ConfigError, Section, _describe, reference_rows
from raypipe.loader import MAX_DENSE_MASK


class ModelShape(Section):
    """The model and its training: the same for every variant.

    The defaults fit a CPU: ~0.4M parameters learn past unigram statistics within a few
    hundred thousand tokens, so that seeds agree to a few hundredths of a bit per byte.
    """

    d_model: int = Field(64, ge=16, le=4096, description="Width of the GPT-2 model")
    layers: int = Field(2, ge=1, le=64, description="Transformer blocks")
    heads: int = Field(4, ge=1, le=64, description="Attention heads (must divide d_model)")
    batch_size: int = Field(8, ge=1, le=4096, description="Sequences per optimizer step")
    lr: float = Field(1e-2, gt=0, le=1, description="Peak AdamW learning rate (cosine decay)")
    warmup: float = Field(0.05, ge=0, lt=1, description="Share of the steps of linear warmup")

    @model_validator(mode="after")
    def _heads_divide_width(self) -> ModelShape:
        if self.d_model % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide d_model ({self.d_model})")
        return self


class AblationConfig(Section):
    variants: list[str] = Field(
        default_factory=lambda: list(DEFAULT),
        min_length=1,
        description=f"Variants to build and train: {', '.join(VARIANTS)}",
    )
    heldout: list[str] = Field(
        min_length=1,
        description="Files of clean text (JSONL/Parquet/text, local or s3://) the models are "
        "scored on; keep them out of the input",
    )
    heldout_field: str = Field("text", description="Field of the held-out files holding text")
    out: str = Field(description="Local folder of the ablation (runs, models, report)")
    tokens: int = Field(
        1_000_000, ge=1_000, le=1 << 40, description="Training tokens per model (equal for all)"
    )
    seeds: int = Field(3, ge=1, le=16, description="Models per variant, to tell gaps from noise")
    vocab_size: int = Field(
        4096,
        ge=0,
        le=65_535,
        description="Tokens of the BPE trained on the input for every variant; 0 = the "
        "config's tokenizer",
    )
    seq_len: int = Field(256, ge=16, le=MAX_DENSE_MASK, description="Tokens per sequence")
    cpus_per_run: int = Field(1, ge=1, le=256, description="CPUs (torch threads) per training")
    model: ModelShape = ModelShape()

    @field_validator("vocab_size")
    @classmethod
    def _room_for_bytes(cls, value: int) -> int:
        if 0 < value < 512:
            raise ValueError("a byte-level BPE needs at least 512 tokens (256 are the bytes)")
        return value

    @field_validator("variants")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        if unknown := [name for name in names if name not in VARIANTS]:
            raise ValueError(f"unknown variant(s) {unknown}; variants: {', '.join(VARIANTS)}")
        if len(set(names)) != len(names):
            raise ValueError(f"a variant is named twice: {names}")
        return names


def ablation_config(**values) -> AblationConfig:
    try:
        return AblationConfig(**values)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def reference_table() -> str:
    header = "| option | default | bounds | meaning |\n|---|---|---|---|"
    return "\n".join([header, *reference_rows(AblationConfig)])
