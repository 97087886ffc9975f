"""The fastvec command end to end, in a tiny configuration: structure, never speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastvec
from fastvec import _core

ROOT = Path(__file__).resolve().parents[2]


def fastvec_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    # Run from a scratch directory, so that the installed fastvec is imported, not the source tree.
    return subprocess.run(
        [sys.executable, "-m", "fastvec", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.slow
@pytest.mark.backends
def test_bench_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "results"
    run = fastvec_cli(
        "bench",
        "--quick",
        "--envs",
        "CartPole-v1",
        "Pong-v5",
        "--num-envs",
        "2",
        "4",
        "--seconds",
        "0.05",
        "--contenders",
        "fastvec",
        "fastvec-async",
        "gym-numpy",
        "gym-sync",
        "--memory",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert "## CartPole-v1" in table and "## Pong-v5" in table
    assert "| x SB3 SubprocVecEnv |" not in table  # SB3 was not selected: no ratio column to show
    assert "| contender | num_envs=2 | num_envs=4 | peak memory @16 envs |" in table
    for label in (
        "fastvec sync (default threads)",
        "fastvec async (default threads)",
        "gymnasium vector_entry_point (numpy)",
        "gymnasium SyncVectorEnv",
    ):
        assert f"| {label} |" in table
    doc = json.loads((out / "results.json").read_text())
    cart = doc["envs"]["CartPole-v1"]["results"]
    assert set(cart) == {"2", "4"}
    for n in ("2", "4"):
        for key in ("fastvec", "fastvec-async", "gym-numpy", "gym-sync"):
            cell = cart[n][key]
            assert cell["status"] == "ok" and len(cell["steps_per_s"]) == 1 and cell["median_steps_per_s"] > 0
    memory = doc["envs"]["CartPole-v1"]["peak_memory_mib"]
    assert memory["fastvec"]["status"] == "ok" and memory["fastvec"]["mib"] > 1
    pong = doc["envs"]["Pong-v5"]["results"]["2"]
    if _core.has_atari:
        assert pong["fastvec"]["status"] == "ok" and pong["fastvec"]["median_steps_per_s"] > 0
        assert "Atari: frames/s = 4 x steps/s" in table
    else:  # built with FASTVEC_ATARI=OFF
        assert pong["fastvec"]["status"] == "not available in this build"
    assert doc["machine"]["cores"] >= 1 and "load_before" in doc["load"]
    png = out / "CartPole-v1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "results.md").read_text() == table


@pytest.mark.slow
def test_bench_measures_memory_when_run_in_the_source_checkout(tmp_path):
    """The README runs `fastvec bench` in the checkout it installed from. The memory probe's fresh
    interpreter imported the checkout's fastvec/ (no built extension) there: every memory cell failed."""
    script = Path(sys.executable).with_name("fastvec")
    run = subprocess.run(
        [
            str(script),
            "bench",
            "--quick",
            "--num-envs",
            "2",
            "--seconds",
            "0.05",
            "--contenders",
            "fastvec",
            "--memory",
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    memory = json.loads(run.stdout)["envs"]["CartPole-v1"]["peak_memory_mib"]["fastvec"]
    assert memory["status"] == "ok" and memory["mib"] > 1, memory


def test_bench_json_on_stdout(tmp_path):
    run = fastvec_cli(
        "bench",
        "--quick",
        "--num-envs",
        "2",
        "--seconds",
        "0.05",
        "--contenders",
        "fastvec",
        "--out",
        str(tmp_path),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["envs"]["CartPole-v1"]["results"]["2"]["fastvec"]["status"] == "ok"


def test_bench_contention_runs_a_busy_loop_beside_the_contenders(tmp_path):
    run = fastvec_cli(
        "bench",
        "--quick",
        "--num-envs",
        "2",
        "--seconds",
        "0.3",
        "--contenders",
        "fastvec",
        "--contention",
        "--out",
        str(tmp_path),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["contention"] == 1
    assert doc["envs"]["CartPole-v1"]["results"]["2"]["fastvec"]["status"] == "ok"
    # The busy loop is the run's own load, not another process's: the run is not reported busy for it.
    assert (tmp_path / "results.md").read_text().count("one CPU-bound process (a busy loop) ran beside") == 1


def test_busy_loops_compute_count_as_the_runs_own_cpu_and_are_gone_after():
    # What must hold on a busy machine too: the loop computes (however small the share the OS gives it), its
    # CPU time counts as the run's own (CpuShare subtracts it from the machine's), and it is gone after.
    import time

    from fastvec.bench import machine
    from fastvec.bench.machine import BusyLoops, process_tree

    def user_ticks(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[11])

    with BusyLoops(1) as loops:
        (loop,) = loops.pids  # (the test process may have other children: forkservers, Ray)
        assert loop in [pid for pid, _ in process_tree(os.getpid())]
        own = machine._own_user_cpu()  # read before the loop's first tick count, and after its last
        ticks = user_ticks(loop)
        deadline = time.monotonic() + 60
        while user_ticks(loop) - ticks < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        ran = (user_ticks(loop) - ticks) / os.sysconf("SC_CLK_TCK")
        assert ran >= 5 / os.sysconf("SC_CLK_TCK")  # it computes
        assert machine._own_user_cpu() - own >= ran - 1e-9  # and counts as the run's own CPU, not a busy machine
    assert not os.path.exists(f"/proc/{loop}")


def _status_if_installed(package: str) -> str:
    """What a contender's cell says when it ran: "ok", or "not installed" where its package is missing."""
    from fastvec.bench.machine import installed

    return "ok" if installed(package) else "not installed"


@pytest.mark.slow
@pytest.mark.mujoco
def test_bench_runs_mujoco_with_the_ceiling_and_memory(tmp_path):
    out = tmp_path / "results"
    run = fastvec_cli(
        "bench",
        "--envs",
        "HalfCheetah-v5",
        "--num-envs",
        "2",
        "--seconds",
        "0.05",
        "--reps",
        "1",
        "--contenders",
        "fastvec",
        "fastvec-async",
        "envpool-t1",
        "gym-sync",
        "gym-numpy",
        "fastvec-envpool",
        "ale-py",
        "ceiling",
        "--memory",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert "MuJoCo: gymnasium's HalfCheetah-v5 on every contender" in table
    assert "| contender | num_envs=2 | peak memory @16 envs |" in table
    assert "| ceiling x min(num_envs, " in table and "projection, not measured |" in table
    doc = json.loads((out / "results.json").read_text())
    cells = doc["envs"]["HalfCheetah-v5"]["results"]["2"]
    for key in ("fastvec", "fastvec-async", "gym-sync", "ceiling"):
        assert cells[key]["status"] == "ok" and cells[key]["median_steps_per_s"] > 0, key
    assert cells["envpool-t1"]["status"] == _status_if_installed("envpool")
    assert cells["gym-numpy"]["status"] == "gymnasium has no vector implementation"
    assert cells["fastvec-envpool"]["status"].startswith("no MuJoCo in fastvec.envpool")
    assert cells["ale-py"]["status"] == "Atari only" or cells["ale-py"]["status"] == "not installed"
    memory = doc["envs"]["HalfCheetah-v5"]["peak_memory_mib"]
    assert memory["fastvec"]["status"] == "ok" and memory["fastvec"]["mib"] > 1
    assert "ceiling" not in memory  # one env in a loop: no vector env to measure


@pytest.mark.slow
@pytest.mark.mujoco
def test_bench_never_loads_the_mujoco_bindings_where_it_measures_fastvec(tmp_path):
    """Importing the mujoco Python bindings (gymnasium's MuJoCo envs do) sets MuJoCo's timer callback in the
    libmujoco fastvec shares, which slowed fastvec's rows and the ceiling by 14-19% once gymnasium's own rows had
    run in the bench's process. Those rows now step in processes of their own, and are timed there."""
    code = """
import sys
from fastvec.bench import contenders
for key in ("gym-sync", "gym-async", "sb3-dummy"):
    runner = contenders.contender(key).build("Hopper-v5", 2)
    runner.warm_up(0.02)
    assert runner.timed(0.05)["steps_per_s"] > 0 and runner.steps_per_call == 2
    runner.close()
print("mujoco" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]


def test_bench_sweeps_mujoco_at_1_8_32_envs_and_never_takes_it_for_atari():
    """MuJoCo ids end in -v5 like Atari's: they were taken for Atari games (Atari's settings, its sweep)."""
    from fastvec.bench import cli, work

    args = cli.parse_args(["--envs", "Hopper-v5", "Pong-v5", "CartPole-v1"])
    assert cli.sizes_of(args, "Hopper-v5") == [1, 8, 32]
    assert cli.sizes_of(args, "CartPole-v1") == [1, 8, 256, 4096]
    assert work.is_mujoco("Hopper-v5") and not work.is_atari("Hopper-v5") and work.is_atari("Pong-v5")
    assert cli.sizes_of(cli.parse_args(["--envs", "Hopper-v5", "--num-envs", "4"]), "Hopper-v5") == [4]


def test_mujoco_actions_are_the_same_draws_within_each_contenders_box():
    """Each contender draws from its own action space (fastvec's and gymnasium's float32, EnvPool's float64):
    the same uniform stream, so the same actions up to float32 rounding, inside the bounds, in the space's dtype."""
    import gymnasium as gym
    import numpy as np

    from fastvec.bench import work

    f32 = work._box_actions(gym.spaces.Box(-0.4, 0.4, (17,), np.float32), 3)
    f64 = work._box_actions(gym.spaces.Box(-0.4, 0.4, (17,), np.float64), 3)
    assert f32.shape == f64.shape == (work.NUM_ACTION_ROWS, 3, 17)
    assert f32.dtype == np.float32 and f64.dtype == np.float64
    assert f32.min() >= np.float32(-0.4) and f32.max() <= np.float32(0.4) and abs(f64).max() <= 0.4
    np.testing.assert_allclose(f32, f64, atol=1e-7)
    assert f64.std() > 0.2  # spread over the box, not stuck at a bound


@pytest.mark.slow
@pytest.mark.mujoco
def test_bench_mujoco_script_prints_every_row_and_the_targets(tmp_path):
    """benchmarks/bench_mujoco.py's smallest run: one env, one num_envs, every default contender."""
    out = tmp_path / "mujoco.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_mujoco.py"),
            "--envs",
            "Hopper",
            "--num-envs",
            "2",
            "--seconds",
            "0.05",
            "--reps",
            "1",
            "--no-memory",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert "## Hopper-v5" in table
    for row in (
        "fastvec sync",
        "fastvec async",
        "EnvPool sync",
        "EnvPool async",
        "gymnasium SyncVectorEnv",
        "gymnasium AsyncVectorEnv",
        "SB3 SubprocVecEnv",
        "fastvec Python-env pool (gymnasium's env)",
        "ceiling: 1 fastvec env, C++ loop, 1 thread",
        "ceiling x min(num_envs, ",
        "2 such loops at once, 2 threads (measured)",
        "fastvec sync, same-step autoreset",
        "fastvec async, same-step autoreset",
        "fastvec (best mode) as % of ceiling x min(num_envs, cores)",
        "fastvec same-step (best mode) as % of the same-step ceiling x min(num_envs, cores)",
        "ceiling, same-step resets: 1 fastvec env, C++ loop, 1 thread",
        "fastvec sync / EnvPool sync",
        "fastvec same-step (best mode) / SB3 SubprocVecEnv",
        "fastvec (best mode) / gymnasium AsyncVectorEnv",
    ):
        assert f"| {row}" in table, row
    assert "| target | met | below target | not measured |" in table
    assert "<= EnvPool's (its smallest) | not measured (--no-memory) |" in table
    from fastvec.bench import contenders

    cells = json.loads(out.read_text())["envs"]["Hopper-v5"]["results"]["2"]
    assert {"fastvec-t2", "fastvec-async-same-step-t2", "envpool-async-t2", "sb3-subproc", "ceiling-t2"} <= set(cells)
    for key, cell in cells.items():
        status = _status_if_installed(contenders.contender(key).package)
        assert cell["status"] == status, (key, cell["status"])
        if status == "ok":
            assert cell["median_steps_per_s"] > 0, key
    assert "fastvec" not in cells  # default threads: only when asked for


MULTIAGENT_ROWS = {
    "ma-fastvec": "fastvec native (default threads)",
    "ma-fastvec-python": "fastvec Python-env pool (PettingZoo's env)",
    "ma-supersuit": "SuperSuit concat_vec_envs_v1, a process per core",
    "ma-agilerl": "AgileRL AsyncPettingZooVecEnv",
}


@pytest.mark.slow
def test_bench_multiagent_rows_count_agent_steps_with_memory(tmp_path):
    """The multi-agent group on an MPE env (native and in the Python-env pool) and on a Python-only PettingZoo env,
    its table and JSON; each call steps every env once, and counts a step per agent (3 on simple_spread, 2 on
    rps). AgileRL is not in the test extra: "not installed" there."""
    out = tmp_path / "results"
    run = fastvec_cli(
        "bench",
        "--quick",
        "--envs",
        "simple_spread_v3",
        "rps_v2",
        "--num-envs",
        "2",
        "--seconds",
        "0.05",
        "--contenders",
        *MULTIAGENT_ROWS,
        "fastvec",  # a single-agent row: not one of a multi-agent env's
        "--memory",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert table.startswith("# fastvec bench: agent-steps/s, median [min-max] of 1 x 0.05 s")
    assert "## simple_spread_v3" in table and "## rps_v2" in table
    assert "Multi-agent: agent-steps/s (one step of one agent = one step)" in table
    assert table.count("| contender | num_envs=2 | peak memory @16 envs |") == 2
    assert table.count("| x SuperSuit | num_envs=2 |") == 2
    assert "| x RLlib MultiAgentEnvRunner |" not in table  # no RLlib sample() row chosen
    for section in table.split("\n## ")[1:]:
        rows = section.split("| x SuperSuit |")[0]
        for label in MULTIAGENT_ROWS.values():
            assert f"\n| {label} |" in rows, label
    assert "| fastvec sync (default threads) |" not in table
    doc = json.loads((out / "results.json").read_text())
    assert set(doc["envs"]) == {"simple_spread_v3", "rps_v2"}
    for env_id, agents in (("simple_spread_v3", 3), ("rps_v2", 2)):
        section = doc["envs"][env_id]
        assert section["unit"] == "agent_steps_per_s"
        cells = section["results"]["2"]
        assert set(cells) == set(MULTIAGENT_ROWS)
        for key, cell in cells.items():
            if key == "ma-fastvec" and env_id == "rps_v2":
                assert cell["status"] == "no native port"
                continue
            assert cell["status"] == _status_if_installed("agilerl" if key == "ma-agilerl" else "fastvec"), key
            if cell["status"] == "ok":
                (rate,), (us,) = cell["steps_per_s"], cell["us_per_call"]
                assert rate * us * 1e-6 == pytest.approx(2 * agents), key  # agent-steps per call: 2 envs
                assert "median_frames_per_s" not in cell
        assert set(section["ratio_to_supersuit"]) == {k for k, c in cells.items() if c["status"] == "ok"}
        memory = section["peak_memory_mib"]
        assert memory["ma-fastvec-python"]["status"] == "ok" and memory["ma-fastvec-python"]["mib"] > 1
    assert doc["envs"]["simple_spread_v3"]["peak_memory_mib"]["ma-fastvec"]["status"] == "ok"
    assert "ma-fastvec" not in doc["envs"]["rps_v2"]["peak_memory_mib"]  # it ran nowhere
    assert (out / "rps_v2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "pettingzoo" in doc["machine"]["versions"] and "supersuit" in doc["machine"]["versions"]


@pytest.mark.slow
@pytest.mark.rllib
def test_bench_rllib_multiagent_rows_count_agent_steps(tmp_path):
    """RLlib's rows on a multi-agent env: its SyncVectorMultiAgentEnv stepped bare, and sample() through RLlibRunner
    with RLlib's MultiAgentEnvRunner and with fastvec's runner (native, Python-env pool), counting the agent steps
    the episodes hold; on rps_v2, whose observations are Discrete, through RLlib's FlattenObservations. Small
    samples here; the bench samples 4000 env steps a call."""
    code = """
import json, warnings
warnings.filterwarnings("ignore")
from fastvec.bench import contenders, runners
from fastvec.bench.ray_runners import RLlibRunner
out = {}
vector = contenders.contender("ma-rllib-vector").build("rps_v2", 3)
out["vector"] = [vector.steps_per_call, vector.run(5)]
vector.close()
for env_id in ("simple_spread_v3", "rps_v2"):
    for runner in ("default", "fastvec", "fastvec-python"):
        if (env_id, runner) != ("rps_v2", "fastvec"):
            r = RLlibRunner(env_id, 2, runner, timesteps=30)
            out[f"{env_id} {runner}"] = [type(r._runner).__name__, r.run(1)]
            r.close()
try:
    RLlibRunner("rps_v2", 2, "fastvec", timesteps=30)
except runners.NotAvailable as e:
    out["rps native"] = str(e)
print(json.dumps(out))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out.pop("vector") == [6, 30]  # 3 envs x 2 agents a call
    assert out.pop("rps native") == "no native port"
    assert len(out) == 5
    for run_of, (cls, steps) in out.items():
        assert cls == ("MultiAgentEnvRunner" if run_of.endswith("default") else "FastvecMultiAgentEnvRunner")
        agents = 3 if run_of.startswith("simple_spread_v3") else 2  # every agent acts every step
        assert steps >= agents * 30 and steps % agents == 0, (run_of, steps)


def test_bench_multiagent_option_and_sizes():
    """--multiagent runs the multi-agent envs at their own sizes, with only the multi-agent rows; the default run
    runs none of them."""
    from fastvec.bench import cli

    args = cli.parse_args(["--multiagent"])
    assert args.envs == ["simple_spread_v3", "rps_v2"]
    assert cli.sizes_of(args, "simple_spread_v3") == [8, 64, 256]
    assert {c.key for c in cli.chosen_for(args, "rps_v2")} == {k for k in cli.DEFAULT_CONTENDERS if k.startswith("ma-")}
    quick = cli.parse_args(["--multiagent", "--quick"])
    assert quick.envs == ["simple_spread_v3"] and cli.sizes_of(quick, "simple_spread_v3") == [8, 64]
    default = cli.parse_args([])
    assert all(not c.key.startswith("ma-") for e in default.envs for c in cli.chosen_for(default, e))
    mixed = cli.parse_args(["--envs", "CartPole-v1", "simple_v3", "--num-envs", "4", "--contenders", "*"])
    assert "ma-supersuit" in {c.key for c in cli.chosen_for(mixed, "simple_v3")}
    assert "ma-supersuit" not in {c.key for c in cli.chosen_for(mixed, "CartPole-v1")}
    assert cli.sizes_of(mixed, "simple_v3") == [4]


def test_multiagent_actions_are_the_same_draws_for_every_contender():
    """Each contender draws from its own action spaces: the same stream, in each agent's space."""
    import gymnasium as gym
    import numpy as np

    from fastvec.bench import work

    spaces = {"a": gym.spaces.Discrete(5), "b": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}
    rows = work.multiagent_actions(spaces, 4)
    again = work.multiagent_actions(dict(spaces), 4)
    assert len(rows) == work.NUM_ACTION_ROWS
    for row, other in zip(rows, again, strict=True):
        assert row["a"].shape == (4,) and set(row["a"].tolist()) <= set(range(5))
        assert row["b"].shape == (4, 2) and row["b"].dtype == np.float32 and abs(row["b"]).max() <= 1.0
        np.testing.assert_array_equal(row["a"], other["a"])
        np.testing.assert_array_equal(row["b"], other["b"])
    assert len({int(x) for row in rows for x in row["a"]}) == 5


@pytest.mark.slow
@pytest.mark.mujoco
def test_bench_runs_dm_control_against_envpool_shimmy_and_the_ceiling(tmp_path):
    """A dm_control task: fastvec's and EnvPool's native ports, the Python rows over shimmy (each in a process of
    its own), the ceiling and memory; the rows not wired for dm_control are not in its table."""
    out = tmp_path / "results"
    rows = ["fastvec", "fastvec-python", "sb3-subproc", "envpool-t1", "ceiling", "gym-numpy", "rllib-default"]
    run = fastvec_cli(
        "bench",
        "--envs",
        "WalkerWalk-v1",
        "CartPole-v1",
        "--num-envs",
        "2",
        "--seconds",
        "0.05",
        "--reps",
        "1",
        "--contenders",
        *rows,
        "--memory",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert "dm_control: the suite's task WalkerWalk-v1 on every contender" in table
    assert "| ceiling x min(num_envs, " in table and "| x SB3 SubprocVecEnv |" in table
    assert "GLFWError" not in run.stderr  # dm_control is imported with no renderer to probe
    doc = json.loads((out / "results.json").read_text())
    cells = doc["envs"]["WalkerWalk-v1"]["results"]["2"]
    assert set(cells) == {"fastvec", "fastvec-python", "sb3-subproc", "envpool-t1", "ceiling"}
    for key in ("fastvec", "fastvec-python", "sb3-subproc", "ceiling"):
        assert cells[key]["status"] == "ok" and cells[key]["median_steps_per_s"] > 0, key
    assert cells["envpool-t1"]["status"] == _status_if_installed("envpool")
    assert {"gym-numpy", "rllib-default"} <= set(doc["envs"]["CartPole-v1"]["results"]["2"])
    memory = doc["envs"]["WalkerWalk-v1"]["peak_memory_mib"]
    for key in ("fastvec", "fastvec-python", "sb3-subproc"):
        assert memory[key]["status"] == "ok" and memory[key]["mib"] > 1, key
    assert "ceiling" not in memory
    assert "shimmy" in doc["machine"]["versions"] and "dm-control" in doc["machine"]["versions"]


@pytest.mark.slow
@pytest.mark.mujoco
def test_bench_never_loads_the_mujoco_bindings_where_it_measures_dm_control(tmp_path):
    """shimmy's dm_control envs import the mujoco bindings (and with them MuJoCo's timer callback, which slows
    fastvec's MuJoCo envs in that process): the shimmy rows step in processes of their own, where the same actions
    are drawn within their Box; fastvec's native rows and the ceiling step in this one."""
    code = """
import sys
from fastvec.bench import contenders
for key in ("fastvec", "fastvec-python", "gym-sync", "sb3-dummy", "sb3-subproc", "ceiling"):
    runner = contenders.contender(key).build("CheetahRun-v1", 2)
    runner.warm_up(0.02)
    assert runner.timed(0.05)["steps_per_s"] > 0, key
    assert runner.steps_per_call == (1 if key == "ceiling" else 2), key  # the ceiling: one env in its loop
    runner.close()
print("mujoco" in sys.modules, "dm_control" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "False"]


def test_bench_dm_control_option_sizes_and_rows():
    """--dm-control runs the registered ones of the issue's four tasks at 1 8 32, with only the rows wired for
    dm_control; the default run runs none of them."""
    from fastvec.bench import cli, work

    args = cli.parse_args(["--dm-control"])
    registered = [t for t in cli.DM_CONTROL_TASKS if t in work.DM_CONTROL_ENVS]
    assert args.envs == registered and {"WalkerWalk-v1", "CheetahRun-v1"} <= set(registered)
    assert cli.sizes_of(args, "WalkerWalk-v1") == [1, 8, 32]
    keys = {c.key for c in cli.chosen_for(args, "WalkerWalk-v1")}
    assert {"fastvec", "fastvec-python", "sb3-subproc", "envpool-t1", "ceiling"} <= keys
    assert not keys & {"gym-numpy", "fastvec-envpool", "ray-actors", "rllib-default", "ale-py", "ma-fastvec"}
    assert cli.parse_args(["--dm-control", "--quick"]).envs == registered[:1]
    assert not set(cli.parse_args([]).envs) & set(work.DM_CONTROL_ENVS)
    assert cli.sizes_of(cli.parse_args(["--envs", "CheetahRun-v1", "--num-envs", "4"]), "CheetahRun-v1") == [4]
    assert work.is_dm_control("CheetahRun-v1") and not work.is_mujoco("CheetahRun-v1")
    assert not work.is_atari("CheetahRun-v1") and not work.is_multiagent("CheetahRun-v1")


def test_dm_control_ids_name_the_suites_domain_and_task(tmp_path):
    """EnvPool's ids spell dm_control's (domain, task): every registered id is a suite task, and so are the
    irregular ones (a capitalized domain, digits)."""
    code = """
import json
from fastvec.bench import work
pairs = [work.dm_control_task(e) for e in work.DM_CONTROL_ENVS]
pairs += [work.dm_control_task(e) for e in ("HumanoidCMUStand-v1", "LqrLqr21-v1", "BallInCupCatch-v1")]
try:
    work.dm_control_task("WalkerFly-v1")
except work.NotAvailable as e:
    pairs.append(str(e))
print(json.dumps(pairs))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    pairs = [tuple(p) if isinstance(p, list) else p for p in json.loads(run.stdout)]
    from fastvec.bench import work

    assert len(pairs) == len(work.DM_CONTROL_ENVS) + 4
    assert ("walker", "walk") in pairs and ("cheetah", "run") in pairs
    assert pairs[-4:] == [
        ("humanoid_CMU", "stand"),
        ("lqr", "lqr_2_1"),
        ("ball_in_cup", "catch"),
        "not a dm_control suite task",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench", "--contenders", "fastvec", "subprocvecenv"], "unknown contender(s) subprocvecenv"),
        (["bench", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["bench", "--seconds", "0"], "--seconds must be > 0"),
        (["bench", "--contention", "-1"], "--contention >= 0"),
        (["bench", "--num-envs", "x"], "invalid int value"),
        (["benchmark"], "invalid choice: 'benchmark'"),
        (["bench", "--multiagent", "--envs", "CartPole-v1"], "not allowed with argument"),
        (["bench", "--dm-control", "--multiagent"], "not allowed with argument"),
        (
            ["bench", "--envs", "simple_spread_v3", "--contenders", "fastvec"],
            "no chosen contender steps the multi-agent env simple_spread_v3; its contenders are: ma-fastvec,",
        ),
        (["bench", "--contenders", "ma-*"], "no chosen contender steps the single-agent env CartPole-v1"),
    ],
)
def test_bad_arguments_give_clear_errors(tmp_path, args, message):
    run = fastvec_cli(*args, cwd=tmp_path)
    assert run.returncode == 2
    assert message in run.stderr


def test_list_prints_the_native_envs(tmp_path):
    run = fastvec_cli("list", cwd=tmp_path)
    assert run.returncode == 0
    for env_id in fastvec.list_envs():
        assert f"  {env_id}\n" in run.stdout
    assert "_Debug-v0" not in run.stdout
    assert "Python-env pool" in run.stdout


def test_a_contender_whose_parent_package_is_missing_is_not_installed():
    """fastvec bench without Ray: the RLlib contenders' package is 'ray.rllib', whose find_spec
    raises instead of returning None; the bench crashed before its first measurement."""
    from fastvec.bench.machine import installed

    assert not installed("no_such_package_fastvec.sub")
    assert not installed("no_such_package_fastvec")
    assert installed("numpy.linalg")


def test_running_in_a_source_tree_says_what_to_do(tmp_path):
    """``python -m fastvec`` in a directory holding fastvec's sources (no compiled module there: the checkout,
    or a Ray worker started in the driver's checkout) imports those first; it said "cannot import name '_core'
    from partially initialized module 'fastvec' (most likely due to a circular import)"."""
    import shutil

    shutil.copytree(ROOT / "fastvec", tmp_path / "fastvec", ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    run = subprocess.run(
        [sys.executable, "-m", "fastvec", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    import importlib.metadata

    if '"editable": true' in (importlib.metadata.distribution("fastvec").read_text("direct_url.json") or ""):
        pytest.skip("an editable install (a developer's, never CI's) redirects the import to the checkout's build")
    assert run.returncode != 0
    assert "a directory without its compiled module (fastvec._core)" in run.stderr
    assert "Run from another directory, or install fastvec in editable mode" in run.stderr
    assert "circular import" not in run.stderr


@pytest.mark.box2d
def test_bench_steps_box2d_with_each_contenders_own_actions():
    """Box2D rows: LunarLander's Discrete(4) and BipedalWalker's Box(4) actions drawn from each contender's own
    action space (they were CartPole's two actions, and BipedalWalker's rows failed on the shape), the
    headline and the 1/8/256 sweep; the per-env Ray actors, which take int actions, are not wired for it."""
    from fastvec.bench import cli, contenders
    from fastvec.bench.runners import NotAvailable

    for env_id in ("LunarLander-v3", "BipedalWalker-v3"):
        for key in (
            "fastvec",
            "fastvec-async",
            "fastvec-python",
            "fastvec-envpool",
            "gym-sync",
            "sb3-dummy",
            "ceiling",
        ):
            runner = contenders.contender(key).build(env_id, 2)
            runner.warm_up(0.02)
            assert runner.timed(0.05)["steps_per_s"] > 0, (env_id, key)
            runner.close()
        assert cli.sizes_of(cli.parse_args(["--envs", env_id]), env_id) == [1, 8, 256]
    with pytest.raises(NotAvailable, match="not wired"):
        contenders.contender("ray-actors").build("BipedalWalker-v3", 2)


def test_discrete_actions_come_from_the_contenders_own_space():
    import gymnasium as gym
    import numpy as np

    from fastvec.bench import work

    actions = work.actions_for("LunarLander-v3", gym.spaces.Discrete(4), 8, np.int32)
    assert actions.shape == (work.NUM_ACTION_ROWS, 8) and actions.dtype == np.int32
    assert set(np.unique(actions)) == {0, 1, 2, 3}
    np.testing.assert_array_equal(actions, work.discrete_actions(8, np.int32, "LunarLander-v3", 4))
    box = work.actions_for("BipedalWalker-v3", gym.spaces.Box(-1, 1, (4,), np.float32), 8, np.int32)
    assert box.shape == (work.NUM_ACTION_ROWS, 8, 4) and box.dtype == np.float32 and abs(box).max() <= 1
