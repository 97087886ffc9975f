"""fastvec bench --training in a tiny configuration: its rows, thread counts and output, never speed."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

SB3_TIANSHOU = ["sb3-dummy", "sb3-subproc", "sb3-fastvec", "tianshou-dummy", "tianshou-subproc", "tianshou-fastvec"]


def bench_training(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fastvec", "bench", "--training", "--seconds", "0.05", "--reps", "2", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def check_rows(doc: dict, keys: list[str], threads: list[str]) -> None:
    """Every row ran, at the thread count it names, with its repetitions timed; ratios only where a baseline ran."""
    assert set(doc["rows"]) == {f"{k}@{t}" for k in keys for t in threads}
    for key, row in doc["rows"].items():
        setting = key.split("@")[1]
        assert row["status"] == "ok", (key, row["status"])
        want = doc["torch_default_threads"] if setting == "default" else int(setting[1:])
        assert row["torch_threads"] == want and row["torch_threads_seen"] == [want], (key, row)
        assert row["torch_threads_setting"] == ("default" if setting == "default" else str(want))
        assert len(row["ms_per_1000_steps"]) == 2 and all(ms > 0 for ms in row["ms_per_1000_steps"])
        assert row["median_ms_per_1000_steps"] == pytest.approx(sum(row["ms_per_1000_steps"]) / 2)
        assert len(row["other_cpu_share"]) == 2
        if "subproc" in key or "rllib-default" in key:
            assert row["x_baseline"] == pytest.approx(1.0)
        else:
            assert row["x_baseline"] > 0


@pytest.mark.slow
def test_training_rows_of_sb3_and_tianshou_at_two_thread_settings(tmp_path):
    """SB3's and Tianshou's PPO on each backend, at torch's default threads and at 1, interleaved in one run: every
    row trains, says how many threads torch ran, and lands in the table, training.md and training.json. (conftest
    sets OMP_NUM_THREADS=1, which the bench's process inherits: torch's default is 1 here too, as a test on a busy
    machine needs: torch's threads spin beside a busy core and an iteration takes seconds.)"""
    run = bench_training(
        "--contenders", "sb3-*", "tianshou-*", "--torch-threads", "default", "1", "--out", str(tmp_path), cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads((tmp_path / "training.json").read_text())
    assert doc["mode"] == "training" and doc["env_id"] == "CartPole-v1" and doc["num_envs"] == 8
    assert doc["torch_default_threads"] >= 1 and doc["machine"]["usable_cores"] >= 1 and "load_before" in doc["load"]
    assert doc["omp_num_threads"] == "1" and doc["torch_default_threads"] == 1
    check_rows(doc, SB3_TIANSHOU, ["default", "t1"])
    table = run.stdout
    assert table == (tmp_path / "training.md").read_text()
    assert table.startswith("# fastvec bench --training: wall time per 1,000 env steps, updates included")
    assert "torch intra-op threads: torch's default (" in table and "; 1 (--torch-threads 1)" in table
    assert "| framework | backend | torch threads | ms / 1,000 env steps | env steps/s | x baseline |" in table
    for backend in ("DummyVecEnv", "SubprocVecEnv", "fastvec.sb3_vec"):
        assert f"| SB3 PPO | {backend} | 1 |" in table
    for backend in ("DummyVectorEnv", "SubprocVectorEnv", "fastvec.tianshou_venv"):
        assert f"| Tianshou PPO | {backend} | 1 |" in table
    assert "| SB3 PPO | fastvec.sb3_vec | 1 (default) |" in table
    assert "| RLlib PPO |" not in table


@pytest.mark.slow
@pytest.mark.rllib
def test_training_rows_of_rllib(tmp_path):
    """One PPO Algorithm.train() per call on RLlib's default runner and on FastvecEnvRunner, torch on one thread."""
    run = bench_training(
        "--contenders", "rllib-*", "--torch-threads", "1", "--out", str(tmp_path), "--json", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    check_rows(doc, ["rllib-default", "rllib-fastvec"], ["t1"])
    assert doc["rows"]["rllib-fastvec@t1"]["backend"] == "FastvecEnvRunner"
    assert "RLlib PPO: one Algorithm.train()" in doc["iterations"]["RLlib PPO"]


def test_training_options_are_checked():
    from fastvec.bench import cli, training

    args = cli.parse_args(["--training"])
    assert [b.key for b in args.backends] == [b.key for b in training.BACKENDS]
    assert args.torch_threads == [None] and args.seconds == training.DEFAULT_SECONDS
    quick = cli.parse_args(["--training", "--quick", "--contenders", "sb3-*", "--torch-threads", "1", "default", "1"])
    assert [b.key for b in quick.backends] == ["sb3-dummy", "sb3-subproc", "sb3-fastvec"]
    assert quick.torch_threads == [1, None] and quick.reps == training.QUICK_REPS
    for bad, says in (
        (["--training", "--torch-threads", "0"], "expected a thread count >= 1 or 'default', got '0'"),
        (["--training", "--contenders", "fastvec"], "--training: unknown row(s) fastvec"),
        (["--training", "--envs", "Pong-v5"], "--training trains on CartPole-v1 with 8 envs"),
        (["--torch-threads", "1"], "--torch-threads applies to --training only"),
    ):
        # From outside the checkout: `python -m` puts the cwd first on sys.path, and the checkout's fastvec/ has
        # no built extension where fastvec was installed from it (as CI installs it).
        run = subprocess.run(
            [sys.executable, "-m", "fastvec", "bench", *bad],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tempfile.gettempdir(),
        )
        assert run.returncode == 2 and says in run.stderr, (bad, run.stderr)
