"""fastvec's Generator.standard_normal (Pcg64::standard_normal, src/core/rng.hpp and ziggurat.hpp) against numpy's,
bit for bit: the ziggurat tables, read out of numpy itself by steering its PCG64 to chosen outputs; every branch of
the sampler (rectangle, wedge, tail); and long streams seeded as fastvec seeds its envs. The C++ side is
tests/cpp/rng_normal_dump.cpp, built here with the flags of every fastvec target (cmake/flags.cmake)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

ROOT = Path(__file__).resolve().parents[2]
LAYERS = 256
MASK64 = (1 << 64) - 1
MOD128 = 1 << 128
PCG_MULT = (2549297995355413924 << 64) | 4865540595714422341
PCG_MULT_INV = pow(PCG_MULT, -1, MOD128)
RABS_END = 1 << 52  # rabs, the abscissa part of a word, has 52 bits


# --- numpy's PCG64, steered ---------------------------------------------------------------------------------------
# PCG64 (XSL-RR) outputs rotr(hi ^ lo, hi >> 58) of its state after the LCG step state * MULT + inc. Any word is
# the output of 2**64 post-step states (pick hi, solve for lo); stepping one back (times MULT's inverse) gives the
# state to set. With inc free as well, two consecutive words can be chosen.


def post_state_for(word: int, hi: int) -> int:
    rot = hi >> 58
    xored = ((word << rot) | (word >> (64 - rot))) & MASK64 if rot else word
    return (hi << 64) | (xored ^ hi)


def pcg_output(state: int) -> int:
    hi, lo = state >> 64, state & MASK64
    rot = hi >> 58
    x = hi ^ lo
    return ((x >> rot) | (x << (64 - rot))) & MASK64 if rot else x


def steer(words: tuple[int, ...], rng: np.random.Generator) -> tuple[int, int]:
    """A PCG64 (state, inc) whose next one or two outputs are ``words``; whatever follows is the LCG's."""
    while True:
        r = [int(h) for h in rng.integers(0, 1 << 64, size=4, dtype=np.uint64)]
        first = post_state_for(words[0], r[0])
        if len(words) == 1:
            inc = r[2] << 64 | r[3] | 1
        else:
            inc = (post_state_for(words[1], r[1]) - PCG_MULT * first) % MOD128
        if inc & 1:  # numpy's own seeding always makes inc odd; keep to such states
            assert pcg_output(first) == words[0]
            return (first - inc) * PCG_MULT_INV % MOD128, inc


class NumpyProbe:
    """numpy's Generator(PCG64) set to chosen states."""

    def __init__(self) -> None:
        self.bit_generator = np.random.PCG64()
        self.generator = np.random.Generator(self.bit_generator)

    def set(self, state: int, inc: int) -> None:
        self.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": inc},
            "has_uint32": 0,
            "uinteger": 0,
        }

    def normal_and_words_used(self, state: int, inc: int, most: int = 3) -> tuple[float, int]:
        """The draw, and how many words it took (``most`` + 1 meaning more than ``most``)."""
        self.set(state, inc)
        value = self.generator.standard_normal()
        after = self.bit_generator.state["state"]["state"]
        used, s = 0, state
        while s != after and used <= most:
            s = (s * PCG_MULT + inc) % MOD128
            used += 1
        return value, used

    def normal_then_word(self, state: int, inc: int) -> tuple[float, int]:
        self.set(state, inc)
        return self.generator.standard_normal(), int(self.bit_generator.random_raw())


def word(idx: int, sign: int, rabs: int) -> int:
    """The 64-bit draw random_standard_normal splits into layer, sign and abscissa."""
    return idx | sign << 8 | rabs << 9


def u_word(u53: int) -> int:
    """A word whose next_double() is u53 / 2**53."""
    return u53 << 11


# --- the C++ side ---------------------------------------------------------------------------------------------------


def build_dump(name: str, build: Path):
    """Builds tests/cpp/NAME.cpp in ``build`` with the flags of every fastvec target (cmake/flags.cmake); returns
    run(*args, stdin=b"") -> its stdout, asserting it exits 0. Shared with the other dump-against-numpy tests."""
    (build / "CMakeLists.txt").write_text(
        f"""cmake_minimum_required(VERSION 3.20)
project({name} LANGUAGES CXX)
include("{ROOT}/cmake/flags.cmake")
add_executable({name} "{ROOT}/tests/cpp/{name}.cpp")
target_include_directories({name} PRIVATE "{ROOT}/src")
target_compile_options({name} PRIVATE ${{FASTVEC_CXX_FLAGS}} -Werror)
target_link_options({name} PRIVATE ${{FASTVEC_LINK_FLAGS}})
"""
    )
    out = build / "out"
    configure = subprocess.run(
        ["cmake", "-S", str(build), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release"], capture_output=True, text=True
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compiled = subprocess.run(["cmake", "--build", str(out)], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr

    def run(*args, stdin: bytes = b"") -> bytes:
        done = subprocess.run([str(out / name), *map(str, args)], input=stdin, capture_output=True)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout

    return run


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return build_dump("rng_normal_dump", tmp_path_factory.mktemp("rng_normal"))


def cpp_states(dump, states: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """standard_normal() and the raw word after it, in C++, from each (state, inc)."""
    records = np.array([(s >> 64, s & MASK64, i >> 64, i & MASK64) for s, i in states], dtype=np.uint64).reshape(-1, 4)
    out = np.frombuffer(dump("states", stdin=records.tobytes()), dtype=np.uint64).reshape(-1, 2)
    assert len(out) == len(states)
    return out[:, 0].copy().view(np.float64), out[:, 1].copy()


def numpy_states(states: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    probe = NumpyProbe()
    pairs = [probe.normal_then_word(s, i) for s, i in states]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs], dtype=np.uint64)


def assert_bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    bad = np.nonzero(got.view(np.uint64) != want.view(np.uint64))[0]
    assert bad.size == 0, f"{bad.size} of {want.size} differ, first at {bad[0]}: {got[bad[0]]!r} != {want[bad[0]]!r}"


def assert_same_draws(dump, states: list[tuple[int, int]]) -> None:
    got_x, got_next = cpp_states(dump, states)
    want_x, want_next = numpy_states(states)
    assert_bits_equal(got_x, want_x)
    np.testing.assert_array_equal(got_next, want_next)  # the same number of words drawn


@pytest.fixture(scope="module")
def cpp_tables(dump) -> dict:
    raw = dump("tables")
    assert len(raw) == 8 * (3 * LAYERS + 2)
    ki = np.frombuffer(raw, dtype=np.uint64, count=LAYERS)
    rest = np.frombuffer(raw, dtype=np.float64, offset=8 * LAYERS)
    return {"ki": ki, "wi": rest[:LAYERS], "fi": rest[LAYERS : 2 * LAYERS], "r": rest[-2], "inv_r": rest[-1]}


@pytest.fixture(scope="module")
def numpy_tables() -> dict:
    """ki, wi and r as numpy's sampler has them, read out of its draws.

    rabs = 1 makes the draw wi[idx] itself (accepted at once, or in layer 1, whose ki is 0, by the wedge test with
    u = 0 against exp(-tiny) = 1). ki[idx] is the least rabs that is not accepted with a single word, found by
    bisection on the words numpy consumed. A tail draw whose first uniform is 0 returns -(r + 0) for rabs = 2**52 - 1.
    """
    probe, rng = NumpyProbe(), np.random.default_rng(7)
    wi = np.array([probe.normal_and_words_used(*steer((word(i, 0, 1), u_word(0)), rng))[0] for i in range(LAYERS)])
    ki = np.zeros(LAYERS, dtype=np.uint64)
    for idx in range(LAYERS):
        lo, hi = 0, RABS_END
        while lo < hi:
            mid = (lo + hi) // 2
            if probe.normal_and_words_used(*steer((word(idx, 0, mid),), rng))[1] == 1:
                lo = mid + 1
            else:
                hi = mid
        ki[idx] = lo
    tail, used = probe.normal_and_words_used(*steer((word(0, 0, RABS_END - 1), u_word(0)), rng))
    assert used >= 3
    return {"ki": ki, "wi": wi, "r": -tail}


# --- tests ----------------------------------------------------------------------------------------------------------


def test_tables_are_numpys(cpp_tables, numpy_tables):
    np.testing.assert_array_equal(cpp_tables["ki"], numpy_tables["ki"])
    assert_bits_equal(cpp_tables["wi"], numpy_tables["wi"])
    assert cpp_tables["r"] == numpy_tables["r"]
    assert cpp_tables["inv_r"] == 1.0 / numpy_tables["r"]
    fi = cpp_tables["fi"]
    assert fi[0] == 1.0 and np.all(np.diff(fi) < 0) and fi[-1] > 0


def test_wedge_thresholds_are_numpys(dump, numpy_tables):
    """fi enters only the wedge test (fi[i-1] - fi[i]) * u + fi[i] < exp(-x*x/2), whose outcome flips at one u for
    a given x; a one-ulp change in fi[i-1] or fi[i] moves that u by one step of 2**-53 (bottom layers) to hundreds.
    For two abscissae inside every wedge, find numpy's flip by bisection on u and check that C++ draws the same on
    both sides of it."""
    probe, rng = NumpyProbe(), np.random.default_rng(11)
    states = []
    for idx in range(1, LAYERS):
        k = int(numpy_tables["ki"][idx])
        for rabs in (k + (RABS_END - k) // 3, k + 2 * (RABS_END - k) // 3):
            steered = {}

            def accepted(u53: int, idx=idx, rabs=rabs, steered=steered) -> bool:
                steered[u53] = steer((word(idx, int(rng.integers(2)), rabs), u_word(u53)), rng)
                return probe.normal_and_words_used(*steered[u53])[1] == 2

            lo, hi = 0, 1 << 53  # accepted for u < flip, rejected from it on
            assert accepted(0) and not accepted(hi - 1)
            while lo < hi:
                mid = (lo + hi) // 2
                if accepted(mid):
                    lo = mid + 1
                else:
                    hi = mid
            assert accepted(lo - 1) and not accepted(lo)
            states += [steered[lo - 1], steered[lo]]
    assert_same_draws(dump, states)


@pytest.mark.parametrize("branch", ["any", "wedge", "tail"])
def test_branches_match_numpy(dump, numpy_tables, branch):
    """Random words (99% accepted at once), words forced into a wedge, and words forced into the tail with a chosen
    first uniform (0, tiny, near 1 and random: r itself, inv_r, and rejection loops); what follows is whatever the
    LCG gives, so rejections go on drawing as they will."""
    rng = np.random.default_rng({"any": 1, "wedge": 2, "tail": 3}[branch])
    ki = numpy_tables["ki"]
    states = []
    for n in range(3000):
        if branch == "any":
            states.append(steer((int(rng.integers(0, 1 << 64, dtype=np.uint64)),), rng))
            continue
        idx = 0 if branch == "tail" else int(rng.integers(1, LAYERS))
        first = word(idx, int(rng.integers(2)), int(rng.integers(int(ki[idx]), RABS_END)))
        u53 = [0, 1, (1 << 53) - 1][n] if n < 3 else int(rng.integers(0, 1 << 53))
        states.append(steer((first, u_word(u53)), rng))
    assert_same_draws(dump, states)


STREAMS = [(0, -1), (42, 0), (42, 7), (123456789, -1), (2**33 + 5, 3)]


def numpy_generator(seed: int, env_index: int) -> np.random.Generator:
    """What fastvec's single_rng(seed) and env_rng(seed, env_index) must be."""
    seq = np.random.SeedSequence(seed)
    if env_index >= 0:
        seq = seq.spawn(env_index + 1)[env_index]
    return np.random.Generator(np.random.PCG64(seq))


def cpp_stream(dump, seed: int, env_index: int, rounds: int, k: int, m: int, low: float, high: float):
    raw = dump("stream", seed, env_index, rounds, k, m, repr(low), repr(high))
    draws = np.frombuffer(raw[:-8], dtype=np.float64)
    assert draws.size == rounds * (k + m)
    return draws, int(np.frombuffer(raw[-8:], dtype=np.uint64)[0])


@pytest.mark.parametrize(("seed", "env_index"), STREAMS)
def test_normal_stream_matches_numpy(dump, seed, env_index):
    n = 1_000_000
    got, next_word = cpp_stream(dump, seed, env_index, 1, 0, n, 0.0, 1.0)
    gen = numpy_generator(seed, env_index)
    assert_bits_equal(got, gen.standard_normal(n))
    assert next_word == int(gen.bit_generator.random_raw())


@pytest.mark.parametrize(("seed", "env_index"), STREAMS[1:3])
def test_interleaved_uniform_normal_matches_numpy(dump, seed, env_index):
    """As MuJoCo resets draw: init_qpos + uniform(-s, s, nq), then init_qvel + s * standard_normal(nv)."""
    rounds, k, m, low, high = 40_000, 15, 14, -0.1, 0.1
    got, next_word = cpp_stream(dump, seed, env_index, rounds, k, m, low, high)
    gen = numpy_generator(seed, env_index)
    want = np.concatenate([a for _ in range(rounds) for a in (gen.uniform(low, high, size=k), gen.standard_normal(m))])
    assert_bits_equal(got, want)
    assert next_word == int(gen.bit_generator.random_raw())
