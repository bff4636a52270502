"""Small exact statistics written out plainly: no numpy, no scipy.

Everything here is a pure function; randomness comes only from a
``random.Random(seed)`` the caller seeds, so results repeat exactly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = [
    "mcnemar_exact_p",
    "normal_cdf",
    "normal_sf",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "tost_normal_p_values",
    "wilson_interval",
]


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p-value on the discordant pair counts.

    Under the null hypothesis each discordant pair is equally likely to go
    either way, so the smaller count follows Binomial(n, 1/2) with
    ``n = only_a + only_b``: ``p = min(1, 2 * sum_{i <= min} C(n, i) / 2**n)``,
    and ``p = 1`` when there is no discordant pair. Integers are exact and
    ``int / int`` rounds once, so large ``n`` loses nothing.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be non-negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, (2 * tail) / (1 << n))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with ``c`` successes among ``n`` attempts.

    ``1 - C(n - c, k) / C(n, k)``, computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``
    so no huge binomial coefficient is ever formed.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    remaining = 1.0
    for i in range(n - c + 1, n + 1):
        remaining *= 1.0 - k / i
    return 1.0 - remaining


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (every one of ``k`` attempts succeeds) for ``c`` successes among ``n``.

    ``C(c, k) / C(n, k)`` (tau-bench's estimator), as ``prod_{i=0}^{k-1} (c - i) / (n - i)``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    value = 1.0
    for i in range(k):
        value *= (c - i) / (n - i)
    return max(value, 0.0)


def wilson_interval(rate: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a rate observed on ``n`` units.

    For a mean of ``n`` values in [0, 1] (a task's success fraction over its
    repeats) the variance is at most ``rate * (1 - rate) / n``, so the interval
    is conservative there too.
    """
    if n < 1:
        raise ValueError(f"need n >= 1, got {n}")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"a rate lies in [0, 1], got {rate}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence lies in (0, 1), got {confidence}")
    z = _normal_quantile(0.5 + confidence / 2.0)
    z2 = z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _normal_quantile(q: float) -> float:
    """The standard normal quantile, by bisection on :func:`normal_cdf` (exact to 1e-12)."""
    low, high = -40.0, 40.0
    while high - low > 1e-12:
        middle = (low + high) / 2.0
        if normal_cdf(middle) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values, interpolating linearly."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must lie in [0, 1], got {q}")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def normal_cdf(x: float) -> float:
    """Standard normal CDF through ``math.erfc``: accurate far into the lower tail too."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_sf(x: float) -> float:
    """Standard normal survival function ``1 - cdf(x)``, without the cancellation (no underflow to 0)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def tost_normal_p_values(
    difference: float, standard_error: float, margin: float
) -> tuple[float, float]:
    """The two one-sided p-values of TOST, by a normal approximation.

    Lower test, H0: ``difference <= -margin``; upper test, H0: ``difference >=
    +margin``. With a zero standard error the answer is 0 when the point
    estimate lies strictly inside the margin and 1 otherwise.
    """
    if standard_error <= 0.0:
        lower = 0.0 if difference > -margin else 1.0
        upper = 0.0 if difference < margin else 1.0
        return lower, upper
    lower = normal_sf((difference + margin) / standard_error)
    upper = normal_cdf((difference - margin) / standard_error)
    return lower, upper


def bootstrap_differences(
    clusters: Sequence[tuple[int, int, int]], *, n_boot: int, seed: int
) -> list[float]:
    """Paired cluster bootstrap of ``rate(B) - rate(A)``, sorted ascending.

    Each cluster is one task: ``(pairs, successes_a, successes_b)``. A replicate
    draws as many tasks as there are, with replacement, and pools their pairs.
    """
    if not clusters:
        return []
    rng = random.Random(seed)
    count = len(clusters)
    sizes = [pairs for pairs, _, _ in clusters]
    gains = [successes_b - successes_a for _, successes_a, successes_b in clusters]
    indices = range(count)
    replicates: list[float] = []
    for _ in range(n_boot):
        drawn = rng.choices(indices, k=count)
        pairs = sum(sizes[i] for i in drawn)
        replicates.append(sum(gains[i] for i in drawn) / pairs if pairs else 0.0)
    replicates.sort()
    return replicates


def standard_deviation(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 denominator); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
