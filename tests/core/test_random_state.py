"""The dm_control family's RandomState (src/envs/dm_control/random_state.hpp) against numpy's np.random.RandomState,
bit for bit: seeding over the whole uint32 range, MT19937's words across regenerations, every sampler with its
edge cases (randint's rejection around powers of two, uniform with low >= high, the cached gauss interleaved with
other draws and cleared by seed), and each vectorized call dm_control.suite makes against the scalar sequence the
header says it is. The C++ side is tests/cpp/random_state_dump.cpp, which runs a script of calls."""

from __future__ import annotations

import numpy as np
import pytest
from test_rng_normal import build_dump

pytestmark = pytest.mark.versions  # numpy's RandomState (frozen by numpy's policy, but numpy's to keep)

# random_state_dump's ops
(CONSTRUCT, SEED, RAW, RANDOM_SAMPLE, UNIFORM, RANDINT, CHOICE, NORMAL, CHOICE_P, STANDARD_NORMAL, RANDINT1,
 SET_STATE) = range(12)  # fmt: skip
FLOAT_OPS = {RANDOM_SAMPLE, UNIFORM, NORMAL, STANDARD_NORMAL}
MASK64 = (1 << 64) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


class Script:
    """RandomState calls, run both by the C++ dump and by numpy; each gives one uint64 per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, object, object]] = []

    def add(self, op: int, a: object = 0, b: object = 0) -> Script:
        self.calls.append((op, a, b))
        return self

    def raw(self, n: int = 1) -> Script:
        for _ in range(n):
            self.add(RAW)
        return self

    def stdin(self) -> bytes:
        chunks = []
        for op, a, b in self.calls:
            if op == SET_STATE:  # a: the key; b: (pos, has_gauss, gauss)
                pos, has_gauss, gauss = b
                key = np.asarray(a, dtype=np.uint32)
                chunks += [np.array([op, pos, has_gauss], dtype=np.uint64).tobytes(), key.tobytes()]
                chunks.append(np.float64(gauss).tobytes())
                continue
            if op == CHOICE_P:
                p = np.asarray(a, dtype=np.float64)
                chunks += [np.array([op, p.size, 0], dtype=np.uint64).tobytes(), p.tobytes()]
                continue
            words = [bits(x) if op in (UNIFORM, NORMAL) else int(x) & MASK64 for x in (a, b)]
            chunks.append(np.array([op, *words], dtype=np.uint64).tobytes())
        return b"".join(chunks)

    def cpp(self, dump) -> np.ndarray:
        out = np.frombuffer(dump(stdin=self.stdin()), dtype=np.uint64)
        assert out.size == len(self.calls)
        return out

    def numpy(self) -> np.ndarray:
        rs = np.random.RandomState(0)  # what RandomState() is in C++
        out = np.zeros(len(self.calls), dtype=np.uint64)
        for i, (op, a, b) in enumerate(self.calls):
            if op == CONSTRUCT:
                rs = np.random.RandomState(a)
                continue
            if op == SEED:
                rs.seed(a)
                continue
            if op == SET_STATE:
                rs.set_state(("MT19937", np.asarray(a, dtype=np.uint32), *b))
                continue
            value = numpy_call(rs, op, a, b)
            out[i] = bits(value) if op in FLOAT_OPS else int(value) & MASK64
        return out


def numpy_call(rs: np.random.RandomState, op: int, a, b):
    if op == RAW:
        return rs._bit_generator.random_raw()
    if op == RANDOM_SAMPLE:
        return rs.random_sample()
    if op == UNIFORM:
        return rs.uniform(a, b)
    if op == RANDINT:
        return rs.randint(a, b)
    if op == CHOICE:
        return rs.choice(a)
    if op == NORMAL:
        return rs.normal(a, b)
    if op == CHOICE_P:
        return rs.choice(len(a), p=a)
    if op == STANDARD_NORMAL:
        return rs.standard_normal()
    assert op == RANDINT1
    return rs.randint(a)


def assert_same(got: np.ndarray, want: np.ndarray, script: Script) -> None:
    bad = np.nonzero(got != want)[0]
    if bad.size:
        i = int(bad[0])
        op, a, b = script.calls[i]
        pytest.fail(f"{bad.size} of {want.size} differ, first call {i}: op {op}({a!r}, {b!r}): {got[i]} != {want[i]}")


def check(dump, script: Script) -> None:
    assert_same(script.cpp(dump), script.numpy(), script)


# --- MT19937 steered: a state whose next words are chosen -----------------------------------------------------------


def untemper(word: int) -> int:
    """The state word MT19937's tempering turns into ``word``: each xor-shift step undone, last first, by iterating
    x = y ^ f(x) until every bit is fixed."""

    def undo_right(y: int, shift: int) -> int:
        x = y
        for _ in range(32 // shift + 1):
            x = y ^ (x >> shift)
        return x

    def undo_left(y: int, shift: int, mask: int) -> int:
        x = y
        for _ in range(32 // shift + 1):
            x = y ^ ((x << shift) & mask)
        return x

    return undo_right(undo_left(undo_left(undo_right(word, 18), 15, 0xEFC60000), 7, 0x9D2C5680), 11)


def steered(words: list[int], seed: int = 0, pos: int = 100) -> tuple[np.ndarray, tuple[int, int, float]]:
    """A set_state argument (key; pos, has_gauss, gauss) whose next raw words are ``words``; the state of
    RandomState(seed) after 624 words otherwise, so that what follows is an ordinary MT19937 stream."""
    rs = np.random.RandomState(seed)
    rs._bit_generator.random_raw(624)
    key = rs.get_state()[1].copy()
    assert pos + len(words) <= 624
    key[pos : pos + len(words)] = [untemper(w) for w in words]
    check = np.random.RandomState(0)
    check.set_state(("MT19937", key, pos, 0, 0.0))
    assert check._bit_generator.random_raw(len(words)).tolist() == words
    return key, (pos, 0, 0.0)


def u_words(u53: int) -> list[int]:
    """Two words whose random_sample() is u53 / 2**53, the lost low bits random-looking."""
    a, b = u53 >> 26, u53 & ((1 << 26) - 1)
    return [a << 5 | (u53 * 7 + 3) % 32, b << 6 | (u53 * 13 + 5) % 64]


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return build_dump("random_state_dump", tmp_path_factory.mktemp("random_state"))


SEEDS = [0, 1, 2, 5, 42, 12345, 2**16, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1]

# randint ranges high - low: around every power of two (where the mask changes), the 32/64-bit switch, the largest.
RANGES = sorted(
    {1, 3, 5, 6, 7, 10, 100, 1000}
    | {(1 << k) + d for k in range(1, 64) for d in (-1, 0, 1)}
    | {(1 << 64) - 2, (1 << 64) - 1}  # the widest randint(low, high) with int64 bounds: INT64_MIN, INT64_MAX
)


def test_numpy_seeds_as_documented():
    """What the header says of numpy's seeding: a Python int, a numpy integer and a 0-d or 1-element array are the
    same seed; a list is init_by_array (another stream); outside the uint32 range is a ValueError."""
    want = np.random.RandomState(7).random_sample(5)
    for seed in (np.uint32(7), np.int64(7), np.uint64(7), np.array(7), np.array([7])):
        np.testing.assert_array_equal(np.random.RandomState(seed).random_sample(5), want)
    assert not np.array_equal(np.random.RandomState([7]).random_sample(5), want)
    for seed in (-1, 2**32, np.uint64(2**32)):
        with pytest.raises(ValueError, match="Seed must be between 0 and 2\\*\\*32 - 1"):
            np.random.RandomState(seed)


def test_numpy_keeps_the_cached_gauss_across_other_draws():
    """As the header says: only seed() clears numpy's cached gauss (the C++ side is checked against this below)."""
    rs = np.random.RandomState(3)
    rs.standard_normal()
    cached = rs.get_state()[4]
    assert rs.get_state()[3] == 1
    rs.random_sample()
    rs.uniform(-1, 1)
    rs.randint(10)
    rs.choice(3)
    rs._bit_generator.random_raw()
    assert rs.get_state()[3:] == (1, cached)
    assert rs.standard_normal() == cached
    rs.standard_normal()
    rs.seed(3)
    assert rs.get_state()[3:] == (0, 0.0)


def test_seeds_give_numpys_words(dump):
    """Constructor and seed() over the uint32 range, each followed by 1300 words (two regenerations of the state)."""
    seeds = SEEDS + [int(s) for s in np.random.default_rng(1).integers(0, 2**32, size=60)]
    script = Script().raw(3)  # default-constructed: RandomState(0)
    for i, seed in enumerate(seeds):
        script.add(SEED if i % 2 else CONSTRUCT, seed).raw(1300)
    check(dump, script)


def test_long_word_stream(dump):
    n = 1_000_000
    script = Script().add(CONSTRUCT, 2**32 - 1).raw(n)
    got = script.cpp(dump)[1:]
    np.testing.assert_array_equal(got, np.random.RandomState(2**32 - 1)._bit_generator.random_raw(n))


def test_randint_and_choice_ranges(dump):
    """Each range a few dozen times from several lows (negative, zero, near int64's ends), with both spellings; a
    word after each range shows the same number of words was drawn (rejections included)."""
    rng = np.random.default_rng(2)
    script = Script().add(CONSTRUCT, 11)
    for span in RANGES:
        lows = {0, -span // 2, INT64_MIN, INT64_MAX - span + 1, int(rng.integers(-(2**40), 2**40))}
        for low in lows:
            if low < INT64_MIN or low + span > INT64_MAX:  # high, exclusive, is an int64 here
                continue
            for _ in range(6):
                script.add(RANDINT, low, low + span)
        if span <= INT64_MAX:
            for _ in range(6):
                script.add(CHOICE, span).add(RANDINT1, span)
        script.raw()
    check(dump, script)


def test_randint_rejection_at_the_mask_edge(dump):
    """Ranges just above a power of two reject nearly half the words: long runs of them, 32- and 64-bit."""
    script = Script().add(CONSTRUCT, 99)
    for span in ((1 << 31) + 1, (1 << 32) + 1, (1 << 62) + 1, 3, 5, 9, 17):
        for _ in range(2000):
            script.add(RANDINT, 0, span)
        script.raw()
    check(dump, script)


def test_uniform_edges(dump):
    """low > high (a negative range), low == high (still one draw), signed zeros, tiny and huge finite ranges."""
    cases = [(0.0, 1.0), (1.0, 0.0), (-np.pi, np.pi), (np.pi, -np.pi), (2.5, 2.5), (0.0, 0.0), (-0.0, 0.0),
             (0.0, -0.0), (5e-324, 1e-323), (-1e300, 1e300), (1e300, -1e300), (1.0, 1.0 + 2**-52)]  # fmt: skip
    script = Script().add(CONSTRUCT, 2024)
    for low, high in cases:
        for _ in range(50):
            script.add(UNIFORM, low, high)
        script.raw()
    check(dump, script)


def random_span(rng: np.random.Generator) -> int:
    return RANGES[int(rng.integers(len(RANGES)))] if rng.random() < 0.3 else int(rng.integers(1, 20))


def random_script(seed: int, n: int) -> Script:
    """n calls of every kind in random order, reseeding now and then, so that the cached gauss meets every other
    draw and seed() while it is full."""
    rng = np.random.default_rng(seed)
    script = Script().add(CONSTRUCT, int(rng.integers(0, 2**32)))
    kinds = [RAW, RANDOM_SAMPLE, UNIFORM, RANDINT, CHOICE, NORMAL, CHOICE_P, STANDARD_NORMAL, RANDINT1]
    for _ in range(n):
        kind = kinds[int(rng.integers(len(kinds)))] if rng.random() > 0.002 else int(rng.integers(2))
        if kind in (CONSTRUCT, SEED):
            script.add(kind, int(rng.integers(0, 2**32)))
        elif kind == UNIFORM:
            low, high = rng.uniform(-10, 10, size=2)
            script.add(UNIFORM, float(low), float(low) if rng.random() < 0.05 else float(high))
        elif kind in (CHOICE, RANDINT1):
            script.add(kind, min(random_span(rng), INT64_MAX))
        elif kind == RANDINT:
            span = random_span(rng)
            low = int(rng.integers(INT64_MIN, INT64_MAX - span, endpoint=True)) if span <= INT64_MAX else INT64_MIN
            script.add(RANDINT, low, low + span)
        elif kind == NORMAL:
            script.add(NORMAL, float(rng.uniform(-5, 5)), 0.0 if rng.random() < 0.05 else float(rng.uniform(0, 3)))
        elif kind == CHOICE_P:
            p = rng.random(int(rng.integers(1, 8)))
            p[rng.random(p.size) < 0.2] = 0.0
            p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
            script.add(CHOICE_P, [float(x) for x in p])
        else:
            script.add(kind)
    return script


@pytest.mark.parametrize("seed", range(4))
def test_interleaved_calls(dump, seed):
    check(dump, random_script(seed, 60_000))


def test_gauss_cache_and_seed(dump):
    """The cached second gauss survives every other draw and is what the next standard_normal or normal returns;
    seed() and a new RandomState drop it."""
    script = Script().add(CONSTRUCT, 8)
    for other in (RAW, RANDOM_SAMPLE, UNIFORM, RANDINT, CHOICE, CHOICE_P, RANDINT1):
        args = {UNIFORM: (-1.0, 1.0), RANDINT: (-3, 1000), CHOICE: (7,), CHOICE_P: ([0.1, 0.1, 0.8],), RANDINT1: (5,)}
        script.add(STANDARD_NORMAL).add(other, *args.get(other, ())).add(STANDARD_NORMAL)
        script.add(STANDARD_NORMAL).add(other, *args.get(other, ())).add(NORMAL, 1.0, 2.0)
    script.add(STANDARD_NORMAL).add(SEED, 8).add(STANDARD_NORMAL).add(STANDARD_NORMAL)
    script.add(STANDARD_NORMAL).add(CONSTRUCT, 8).add(STANDARD_NORMAL).raw()
    check(dump, script)


def test_choice_with_p(dump):
    """manipulator's choice(['in_hand', 'in_target', 'uniform'], p=[.1, .1, 1 - .1 - .1]), zeros in p (never
    chosen), one-element p, and p that numpy's cumsum does not bring to exactly 1 (normalised by cdf[-1])."""
    ps = [[0.1, 0.1, 1 - 0.1 - 0.1], [0.0, 1.0], [1.0, 0.0], [1.0], [0.5, 0.0, 0.5], [0.1] * 10, [1 / 3] * 3]
    script = Script().add(CONSTRUCT, 77)
    for p in ps:
        for _ in range(400):
            script.add(CHOICE_P, p)
        script.raw()
    got = script.cpp(dump)
    assert_same(got, script.numpy(), script)
    assert set(got[1 + 401 : 1 + 401 + 400].tolist()) == {1}  # p = [0, 1]


def test_dm_control_vector_calls_are_scalar_sequences(dump):
    """Each vectorized call dm_control.suite makes equals the scalar calls the header maps it to, in order, with no
    word drawn more or less (the word after each call matches)."""
    lows = np.array([-np.pi, -2.0, -np.pi, 0.1, -0.5])
    highs = np.array([np.pi, 2.0, np.pi, 0.9, 0.5])
    scales = np.array([0.3, 0.0, 1.5])
    p = [0.1, 0.1, 1 - 0.1 - 0.1]
    rs = np.random.RandomState(1234)
    want = [0]
    script = Script().add(CONSTRUCT, 1234)

    def record(values, ops):
        want.extend(bits(v) if isinstance(v, float) else int(v) & MASK64 for v in np.ravel(values).tolist())
        for op in ops:
            script.add(*op)
        want.append(int(rs._bit_generator.random_raw()))
        script.raw()

    for _ in range(3):
        record(
            rs.uniform(lows, highs), [(UNIFORM, lo, hi) for lo, hi in zip(lows, highs, strict=True)]
        )  # manipulator, cheetah
        record(rs.uniform(-0.034, 0.034, 5), [(UNIFORM, -0.034, 0.034)] * 5)  # cartpole
        record(rs.uniform(0.5, 1, (4, 4)), [(UNIFORM, 0.5, 1)] * 16)  # quadruped's bumps
        record(rs.uniform(-0.3, 0.3, size=(2,)), [(UNIFORM, -0.3, 0.3)] * 2)  # quadruped, swimmer
        record(rs.randn(5), [(STANDARD_NORMAL,)] * 5)  # cartpole, lqr
        record(rs.randn(4), [(STANDARD_NORMAL,)] * 4)  # fish, quadruped, randomizers
        record(rs.randn(3), [(STANDARD_NORMAL,)] * 3)  # random_limited_quaternion: axis ...
        record(rs.rand(), [(RANDOM_SAMPLE,)])  # ... then angle
        record(rs.rand(4), [(RANDOM_SAMPLE,)] * 4)  # randomizers, free joints
        record(rs.randint(4), [(RANDINT1, 4)])  # stacker
        record(rs.uniform(*(-np.pi, np.pi)), [(UNIFORM, -np.pi, np.pi)])  # dog's uniform(*ctrlrange)
        choice = rs.choice(["in_hand", "in_target", "uniform"], p=p)  # manipulator
        record(["in_hand", "in_target", "uniform"].index(str(choice)), [(CHOICE_P, p)])
        record(rs.normal(scale=scales), [(NORMAL, 0.0, s) for s in scales])  # wrappers.action_noise
        record(rs.randn(), [(STANDARD_NORMAL,)])  # odd count: the next randn(k) starts from the cached gauss
    assert_same(script.cpp(dump), np.array(want, dtype=np.uint64), script)


def test_set_state_from_numpys_get_state(dump):
    """States numpy's get_state returns mid-stream (any pos, with and without a cached gauss), then mixed calls."""
    rng = np.random.default_rng(5)
    script = Script()
    for n in (0, 1, 311, 623, 624, 625, 2000):
        rs = np.random.RandomState(int(rng.integers(0, 2**32)))
        rs._bit_generator.random_raw(n)
        for has_gauss in (False, True):
            if has_gauss:
                rs.standard_normal()
            _, key, pos, cached, gauss = rs.get_state()
            assert cached == has_gauss
            script.add(SET_STATE, key, (pos, cached, gauss))
            for op in (STANDARD_NORMAL, RANDOM_SAMPLE, STANDARD_NORMAL, STANDARD_NORMAL):
                script.add(op)
            script.raw(700)
    check(dump, script)


def test_exact_draw_edges(dump):
    """Steered words: random_sample's extremes (0 and 1 - 2**-53) through uniform; the polar method's rejections
    (r2 == 0 at x1 = x2 = 0, r2 == 1 at x1 = -1); choice(p) with u exactly on a cdf step (side="right": the next
    index) and u = 0 against a zero first p (never chosen); randint words exactly at the range's top and one above."""
    top = (1 << 53) - 1
    half, quarter = 1 << 52, 1 << 51
    cases: list[tuple[list[int], list[tuple]]] = [
        (u_words(0) + u_words(top), [(RANDOM_SAMPLE,), (RANDOM_SAMPLE,)]),
        (u_words(0) + u_words(top), [(UNIFORM, -2.0, 3.0), (UNIFORM, 3.0, -2.0)]),
        (u_words(half) * 2 + u_words(0) + u_words(half) + u_words(quarter) * 2, [(STANDARD_NORMAL,)] * 2),
        (u_words(half), [(CHOICE_P, [0.5, 0.5])]),
        (u_words(0), [(CHOICE_P, [0.0, 1.0])]),
        (u_words(0), [(CHOICE_P, [0.0, 0.0, 1.0])]),
        (u_words(quarter) + u_words(half), [(CHOICE_P, [0.25, 0.25, 0.5])] * 2),
        ([5, 6 | 8, 7], [(RANDINT, 10, 16), (RANDINT, 0, 6)]),  # rng = 5, mask 7
        ([0xFFFFFFFF, 0], [(RANDINT, 0, 1 << 32), (RANDINT, -5, (1 << 32) - 5)]),
        ([0x40000000, 2, 0x40000000, 1], [(RANDINT, -1, (1 << 62) + 1)]),  # 64-bit: rng = 2**62 + 1
    ]
    script = Script()
    for words, calls in cases:
        script.add(SET_STATE, *steered(words))
        for call in calls:
            script.add(*call)
        script.raw(3)
    got = script.cpp(dump)
    assert_same(got, script.numpy(), script)
    results = [got[i] for i, (op, _, _) in enumerate(script.calls) if op == CHOICE_P]
    assert results[:5] == [1, 1, 2, 1, 2]  # the edges hit what the docstring says
