"""Type stub for fastvec's native module (private: use fastvec.make)."""

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, final, overload

import numpy as np

has_atari: bool
ale_py_version: str
atari_kernels: str  # only when has_atari: "avx512" or "portable"
has_mujoco: bool
mujoco_version: str  # only when has_mujoco: the MuJoCo library's version string
has_xla: bool  # built with XLA FFI's header (jaxlib's): xla_handlers() and fastvec's xla()

class EnvError(RuntimeError):
    env_id: int  # the env that raised (set when a pool re-raises it): reset it to go on

@final
class Result:
    """A batch of results, one read-only attribute per field: what both pools' recv() and step() return."""

    _fields: ClassVar[tuple[str, ...]]  # the fields' names, in order (as a namedtuple's)
    @overload
    def __new__(cls, fields: Sequence[Any]) -> Result: ...  # one value per name of _fields, in order
    @overload
    def __new__(
        cls,
        *,
        obs: Any,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        env_id: np.ndarray,
        ended: np.ndarray | None,
        episode_return: np.ndarray | None,
        episode_length: np.ndarray | None,
        final_obs: Any,
        info: Mapping[str, Any],
        final_info: dict[str, Any] | None,
    ) -> Result: ...
    @property
    def obs(self) -> Any: ...  # an array, or a dict/tuple of arrays for composite spaces
    @property
    def reward(self) -> np.ndarray: ...  # float32 (native envs), float64 (MuJoCo's and Python envs': as returned)
    @property
    def terminated(self) -> np.ndarray: ...
    @property
    def truncated(self) -> np.ndarray: ...
    @property
    def env_id(self) -> np.ndarray: ...
    @property
    def ended(self) -> np.ndarray | None: ...
    @property
    def episode_return(self) -> np.ndarray | None: ...
    @property
    def episode_length(self) -> np.ndarray | None: ...
    @property
    def final_obs(self) -> Any: ...
    @property
    def info(self) -> Mapping[str, Any]: ...  # read-only and shared when the env has no info values
    @property
    def final_info(self) -> dict[str, Any] | None: ...

def native_envs() -> list[dict[str, Any]]: ...
def loop_rate(
    env: str,
    options: dict[str, float],
    string_options: dict[str, str],
    range_options: dict[str, tuple[float, float]],
    steps: int,
    max_episode_steps: int,
    next_step: bool = True,
) -> float: ...
def control_timestep(
    env: str,
    options: dict[str, float],
    string_options: dict[str, str],
    range_options: dict[str, tuple[float, float]],
) -> float: ...
def atari_loop_rate(
    options: dict[str, float], string_options: dict[str, str], steps: int, preprocess: bool
) -> float: ...
def set_numpy_dot(kind: str) -> None: ...  # only when has_mujoco
def set_numpy_exp(loop: int, data: int) -> None: ...
def set_numpy_log1p(loop: int, data: int) -> None: ...
def set_numpy_arcsinh(loop: int, data: int) -> None: ...
def set_numpy_tanh(loop: int, data: int) -> None: ...
def set_numpy_cos(loop: int, data: int) -> None: ...
def xla_handlers() -> dict[str, Any]: ...  # only when has_xla: PyCapsules of XLA FFI handlers, by name
def set_numpy_arctan2(loop: int, data: int) -> None: ...
def write_pending(fd: int, pending: bytearray) -> int: ...

class Pool:
    def __init__(
        self,
        env: str,
        num_envs: int,
        batch_size: int,
        num_threads: int,
        block_size: int,
        max_episode_steps: int,
        autoreset_mode: str,
        seed: int,
        options: dict[str, float],
        string_options: dict[str, str],
        *,
        adapt_threads: bool = False,
        initial_threads: int = 0,
        info_layout: str = "gymnasium",  # "gymnasium" or "envpool": what a batch's info holds besides the env's values
        thread_affinity_offset: int = -1,
        range_options: dict[str, tuple[float, float]] = ...,
    ) -> None: ...
    def spec(self) -> dict[str, Any]: ...
    @property
    def num_envs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def num_threads(self) -> int: ...
    @property
    def active_threads(self) -> int: ...
    @property
    def block_size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def in_flight(self) -> int: ...  # envs sent (stepped or reset) and not received
    def step(self, actions: Any) -> Result: ...
    def send(self, actions: Any, env_id: Any) -> None: ...
    def recv(self, timeout: float | None = None) -> Result: ...
    def recv_rest(self, timeout: float | None = None) -> Result: ...
    def send_reset(self, env_id: Any, seeds: list[int | None]) -> None: ...
    def reset_envs(self, env_id: Any, seeds: list[int | None], all_rows: bool) -> Result: ...
    def drain(self) -> None: ...
    def peek(self, env_id: Any, frames: bool) -> np.ndarray: ...
    def close(self) -> None: ...
    def xla_handle(self) -> tuple[int, int]: ...
