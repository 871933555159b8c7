"""Where and in what precision training runs: `device`, `dtype`, `device_map` of
configs/training.yaml resolved against the machine (pure, apart from `detect`).

`auto` means: a GPU when torch sees one, else the CPU; bfloat16 on a GPU that supports it,
float16 on an older one, float32 on the CPU (its bf16 kernels are slow and this project's
CPU runs are the tests). `use_cpu` is derived from the device, never forced, so the same
config trains on a laptop and on a GPU box.

Precision on a GPU is mixed: the trainer's autocast (`bf16`/`fp16` in the TRL args) does
the matmuls in half precision. bfloat16 weights are loaded as bfloat16 (half the memory;
its range needs no loss scaling); float16 weights stay float32 because the fp16 gradient
scaler refuses to unscale fp16 parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Device = Literal["auto", "cpu", "cuda"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]


@dataclass(frozen=True)
class Placement:
    """A resolved device and precision, as the trainers and `from_pretrained` take them."""

    device: Literal["cpu", "cuda"]
    dtype: Literal["float32", "bfloat16", "float16"]
    device_map: str | dict[str, Any] | None = None

    @property
    def use_cpu(self) -> bool:
        return self.device == "cpu"

    def trainer_args(self) -> dict[str, Any]:
        """The precision keys of a TRL `SFTConfig` / `GRPOConfig`."""
        return {
            "use_cpu": self.use_cpu,
            "bf16": self.dtype == "bfloat16",
            "fp16": self.dtype == "float16",
        }

    def load_kwargs(self) -> dict[str, Any]:
        """`AutoModelForCausalLM.from_pretrained` keys: weight dtype and device map."""
        import torch

        weights = torch.bfloat16 if self.dtype == "bfloat16" else torch.float32
        out: dict[str, Any] = {"dtype": weights}
        if self.device_map is not None:
            out["device_map"] = self.device_map
        return out


def resolve(
    device: Device,
    dtype: Dtype,
    device_map: str | dict[str, Any] | None,
    *,
    cuda: bool,
    bf16_supported: bool,
    where: str = "configs/training.yaml",
) -> Placement:
    """The placement `device`/`dtype`/`device_map` ask for on a machine with (`cuda`) or
    without a GPU; a request the machine cannot honour is an error naming the key."""
    if device == "cuda" and not cuda:
        raise ValueError(
            f"{where}: device is 'cuda' but torch sees no GPU (torch.cuda.is_available() is "
            "False); use device: auto or cpu"
        )
    dev: Literal["cpu", "cuda"] = (
        "cuda" if device == "cuda" or (device == "auto" and cuda) else "cpu"
    )
    if dtype == "auto":
        dt: Literal["float32", "bfloat16", "float16"] = (
            "float32" if dev == "cpu" else "bfloat16" if bf16_supported else "float16"
        )
    else:
        dt = dtype
    if dev == "cpu" and dt == "float16":
        raise ValueError(f"{where}: dtype float16 needs a GPU (device resolved to cpu)")
    if dev == "cuda" and dt == "bfloat16" and not bf16_supported:
        raise ValueError(f"{where}: dtype bfloat16 but this GPU does not support it (use float16)")
    if dev == "cpu" and device_map not in (None, "cpu"):
        raise ValueError(
            f"{where}: device_map {device_map!r} places the model on GPUs but the device "
            "resolved to cpu"
        )
    return Placement(dev, dt, device_map)


def detect() -> tuple[bool, bool]:
    """(a GPU is visible, it supports bfloat16) for this process."""
    import torch

    cuda = torch.cuda.is_available()
    return cuda, bool(cuda and torch.cuda.is_bf16_supported())


def placement(config: Any) -> Placement:
    """The `TrainingConfig`'s placement on this machine."""
    cuda, bf16 = detect()
    return resolve(config.device, config.dtype, config.device_map, cuda=cuda, bf16_supported=bf16)


def trainer_placement(trainer: Any) -> dict[str, Any]:
    """Where a built trainer actually runs, read back from it (the run's `result.json`
    `extra.placement`): its device, precision flags and the policy's weight dtype."""
    args = trainer.args
    weights = next(iter(trainer.model.parameters())).dtype
    return {
        "device": str(args.device),
        "use_cpu": bool(args.use_cpu),
        "bf16": bool(args.bf16),
        "fp16": bool(args.fp16),
        "weights_dtype": str(weights).removeprefix("torch."),
    }
