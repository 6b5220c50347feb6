"""Type stubs of the native module (the Rust extension built by maturin)."""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

__version__: str
__build__: str

def run(
    command: str,
    settings: str,
    preset: Optional[str] = None,
    data: Optional[np.ndarray] = None,
    labels: Optional[np.ndarray] = None,
    progress: Optional[Callable[[str, int, Optional[int]], Any]] = None,
) -> Dict[str, Any]: ...
def embedded_digits() -> Tuple[np.ndarray, np.ndarray]: ...
def merge_shards(
    out: str, shards: List[str], force: bool = False, from_array: bool = False
) -> str: ...
