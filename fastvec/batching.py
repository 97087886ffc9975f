"""Batches of a space's elements and of info dicts, as gymnasium's vector envs lay them out: a batch's rows,
batches put together, and a batched info dict taken apart again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np


def row(space: gym.Space, batch: Any, i: int) -> Any:
    """Row ``i`` of a batch of ``space``'s elements (an array, or a dict/tuple of them)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: row(s, batch[k], i) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(row(s, b, i) for s, b in zip(space.spaces, batch, strict=True))
    return batch[i]


def rows(space: gym.Space, batch: Any, pick: np.ndarray) -> Any:
    """The rows ``pick`` of a batch of ``space``'s elements."""
    if isinstance(space, gym.spaces.Dict):
        return {k: rows(s, batch[k], pick) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(rows(s, b, pick) for s, b in zip(space.spaces, batch, strict=True))
    if isinstance(batch, tuple):  # a space of no fixed size (Text, Graph, ...): gymnasium batches a tuple of objects
        return tuple(batch[i] for i in np.asarray(pick).tolist())
    return batch[pick]


def concatenate(space: gym.Space, batches: list[Any]) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: concatenate(s, [b[k] for b in batches]) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(concatenate(s, [b[j] for b in batches]) for j, s in enumerate(space.spaces))
    if isinstance(batches[0], tuple):  # (tuples of objects, as rows() says)
        return tuple(x for b in batches for x in b)
    return np.concatenate(batches)


def info_rows_at(info: Mapping[str, Any], pick: np.ndarray) -> dict[str, Any]:
    """The rows ``pick`` of a batched info dict (nested dicts, as gymnasium batches an env's dict values, too)."""
    return {k: info_rows_at(v, pick) if isinstance(v, Mapping) else v[pick] for k, v in info.items()}


# The keys fastvec adds to a batch's info (not the envs' own).
FASTVEC_INFO_KEYS = frozenset(("env_id", "episode_return", "episode_length", "final_obs", "final_info"))


def info_rows(info: Mapping[str, Any], n: int, skip: frozenset[str] = FASTVEC_INFO_KEYS) -> list[dict[str, Any]]:
    """A batched info dict as ``n`` per-env dicts, as each env returned it: a key is in row ``i`` where its
    ``_key`` mask (if any) is set; numpy scalars become Python ones; nested dicts are unbatched too."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, value in info.items():
        if key.startswith("_") or key in skip:
            continue
        mask = info.get("_" + key)
        if isinstance(value, Mapping):
            for i, sub in enumerate(info_rows(value, n, frozenset())):
                if mask is None or mask[i]:
                    out[i][key] = sub
            continue
        for i in range(n) if mask is None else np.flatnonzero(mask).tolist():
            v = value[i]
            out[i][key] = v.item() if isinstance(v, np.generic) else v
    return out


def merge_infos(infos: Sequence[Mapping[str, Any]], sizes: list[int], order: np.ndarray) -> dict[str, Any]:
    """Info dicts of consecutive batches as one, rows permuted by ``order`` (a key missing in a batch: masked off)."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for info in infos for k in info):
        parts = []
        for info, size in zip(infos, sizes, strict=True):
            if key in info:
                parts.append(np.asarray(info[key]) if not isinstance(info[key], dict) else info[key])
            else:
                parts.append(None if not key.startswith("_") else np.zeros(size, dtype=bool))
        if any(isinstance(p, dict) for p in parts):
            out[key] = merge_infos([p if isinstance(p, dict) else {} for p in parts], sizes, order)
            continue
        like = next(p for p in parts if p is not None)
        filled = [
            p
            if p is not None
            else np.full((size, *like.shape[1:]), None if like.dtype == object else 0, dtype=like.dtype)
            for p, size in zip(parts, sizes, strict=True)
        ]
        out[key] = np.concatenate(filled)[order]
    return out
