# Typing stubs of the ringfeed package (PEP 561: py.typed beside them).
# Loader's keywords, defaults and enum names are those of the C library's
# rf_config table as the package publishes them (inspect.signature(Loader));
# python/tests/test_keywords.py checks that this file lists the same
# keywords, with the same defaults, and for each enum keyword the same names.
import os
from typing import Any, Callable, Dict, Iterator, Literal, Optional, Sequence, Tuple, Union

import torch

__version__: str
__all__: list

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Floats = Union[Sequence[float], torch.Tensor]
# (images, labels), (images, labels, ids) with with_ids=True, or (rows, ids)
_Batch = Tuple[torch.Tensor, ...]

class Error(RuntimeError):
    """An error from the loader: args = (code, message); str(e) is the message."""
    code: Optional[int]      # negative errno value or ringfeed code (ringfeed.ECONFIG, ...)
    name: Optional[str]      # its name: "ECONFIG", "EDEADLK", ...
    message: Optional[str]

# ringfeed.h's codes (Error.code), and ERROR_CODES naming them all
ERROR_CODES: Dict[str, int]
EOF: int
EBADSAMPLE: int
ETOOMANYBAD: int
ENOIOURING: int
ECONFIG: int
EEMPTY: int
EINDEX: int
ESTATE: int
ESTATEVERSION: int
ESTATEMISMATCH: int
EFORKED: int
EABI: int
ELOST: int

class SampleLossWarning(RuntimeWarning): ...

class FieldBatch(Tuple[torch.Tensor, ...]):
    """A batch with fields (Loader(fields=...)): the usual tuple, and its fields by name."""
    @property
    def field_names(self) -> Tuple[str, ...]: ...
    def field(self, name: str) -> list: ...
    def packed(self, name: str) -> Tuple[torch.Tensor, torch.Tensor]: ...
    def present(self, name: str) -> torch.Tensor: ...

class Loader:
    def __init__(
        self,
        source: _Path,
        *,
        device: Union[str, torch.device, int, None] = "cpu",
        hold: Literal["gc", "next"] = "gc",
        copy: bool = False,
        debug: bool = False,
        on_bad_sample: Optional[Callable[[str, int, str], Any]] = None,
        with_ids: bool = False,
        epochs: int = 0,
        batch_transform: Optional[Callable[[torch.Tensor], Any]] = None,
        batch_size: int = 64,
        resize: int = 256,
        crop: int = 224,
        threads: int = 0,
        io_depth: int = 256,
        prefetch: Optional[int] = None,
        seed: int = 0,
        shuffle: int = 1,
        drop_last: int = 0,
        on_error: Union[Literal["skip", "fail"], int] = "skip",
        read_pool_bytes: int = 67108864,
        log_level: Union[Literal["none", "error", "warn", "info"], int] = "none",
        no_direct_io: int = 0,
        random_resized_crop: int = 0,
        rrc_scale: Tuple[float, float] = (0.08, 1.0),
        rrc_ratio: Tuple[float, float] = (0.75, 1.3333334),
        flip: float = 0.0,
        dtype: Union[Literal["uint8", "float16", "float32"], torch.dtype, int] = "uint8",
        layout: Union[Literal["hwc", "chw"], int] = "hwc",
        mean: _Floats = (0.0, 0.0, 0.0),
        std: _Floats = (1.0, 1.0, 1.0),
        max_pixels: int = 100000000,
        no_scaled_decode: int = 0,
        no_region_decode: int = 0,
        verify_full: int = 0,
        in_order: int = 1,
        io_path: Union[Literal["auto", "fixed", "plain", "pread", "uring_fixed", "uring_plain"],
                       int] = "auto",
        pread_threads: int = 0,
        raw: int = 0,
        raw_max_bytes: int = 262144,
        index_cache: Optional[_Path] = None,
        include_hidden: int = 0,
        sampler: Union[Literal["shuffle", "sequential", "weighted", "balanced"], int] = "shuffle",
        rank: int = -1,
        world_size: int = -1,
        rank_tail: Union[Literal["pad", "drop"], int] = "pad",
        samples_per_epoch: int = 0,
        fetch_only: int = 0,
        device_convert: int = 0,
        decode: Union[Literal["cpu", "gpu", "auto"], int] = "cpu",
        zstd_dict: Optional[_Path] = None,
        shard_access: Union[Literal["random", "sequential"], int] = "random",
        shuffle_block: int = 0,
        seq_len: int = 0,
        stride: int = 0,
        token_dtype: Union[Literal["uint16", "uint32", "int32", "int64", "stored"], torch.dtype,
                           int, None] = None,
        source_kind: Union[Literal["auto", "files", "tar"], int] = "auto",
        field_max: int = 0,
        fields: Union[str, Sequence[str], None] = None,
        remote_timeout_ms: int = 0,
        cache_dir: Optional[_Path] = None,
        cache_bytes: int = 0,
        cache_group: Optional[str] = None,
        columns: Optional[str] = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def __iter__(self) -> Iterator[_Batch]: ...
    def __next__(self) -> _Batch: ...
    def state_dict(self) -> Dict[str, Any]: ...
    def load_state_dict(self, state: Dict[str, Any]) -> None: ...
    def stats(self) -> Dict[str, Any]: ...
    @property
    def classes(self) -> list: ...
    @property
    def class_to_idx(self) -> Dict[str, int]: ...
    def sample_path(self, sample_id: Union[int, torch.Tensor]) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Loader": ...
    def __exit__(self, *exc: Any) -> None: ...

def defaults() -> Dict[str, Any]: ...
def formats() -> Tuple[str, ...]: ...
def state_parse(state: Union[bytes, Dict[str, Any]]) -> Dict[str, int]: ...
def state_at_epoch(state: bytes, epoch: int) -> bytes: ...
