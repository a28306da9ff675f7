"""How often the Alternative Annotator Test (services/stats/alttest.py) says "replace" when it should not,
and how often it does when it should.

Simulated studies on tied 1-5 ratings: a latent quality z ~ N(0, 1) per output; R raters each rate
cut(z + N(0, 0.6^2)) at the cut points -1, -0.3, 0.4, 1.1. The metric is on the rubric's
scale already (continuous, no calibration in this bench): f = c(z) + N(0, s^2), c(z) = the expected rating
given z (1 + sum_j Phi((z - cut_j) / 0.6)), i.e. the raters' consensus.

- null ("exactly eps worse"): s is set so that, in the population, mean(W^h) - mean(W^f) = eps for every
  rater (bisection on 400,000 simulated outputs); at that boundary each rater's one-sided test has size
  <= alpha, and "replace" needs half the raters rejected after Benjamini-Yekutieli. Target: <= 5 %.
- power ("equals the consensus"): s = 0, the metric is c(z) itself.

Each cell prints the replace rate over the replicates with its binomial Monte Carlo SE.

Usage: python bench/alttest.py [--replicates 300] [--sizes 50,100,200] [--raters 3,5] [--epsilon 0.2]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.special import ndtr

from services.stats import alt_test

CUTS = np.array([-1.0, -0.3, 0.4, 1.1])
NOISE = 0.6


def ratings(z: np.ndarray, raters: int, rng: np.random.Generator) -> np.ndarray:
    latent = z[:, None] + rng.normal(0, NOISE, (z.size, raters))
    return 1.0 + (latent[:, :, None] > CUTS).sum(axis=2)


def consensus(z: np.ndarray) -> np.ndarray:
    return 1.0 + ndtr((z[:, None] - CUTS) / NOISE).sum(axis=1)


def gap(s: float, raters: int, eps_seed: int = 0, n: int = 400_000) -> float:
    """Population mean(W^h) - mean(W^f) for rater 0, the reference the mean of the others."""
    rng = np.random.default_rng(eps_seed)
    z = rng.normal(size=n)
    r = ratings(z, raters, rng)
    f = consensus(z) + rng.normal(0, s, n)
    ref = r[:, 1:].mean(axis=1)
    a_f, a_h = -np.abs(f - ref), -np.abs(r[:, 0] - ref)
    return float(np.mean(a_h >= a_f) - np.mean(a_f >= a_h))


def noise_for(eps: float, raters: int) -> float:
    lo, hi = 0.0, 5.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if gap(mid, raters) < eps:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def replace_rate(n: int, raters: int, s: float, eps: float, replicates: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    names = [f"r{j}" for j in range(raters)]
    hits = 0
    for _ in range(replicates):
        z = rng.normal(size=n)
        res = alt_test(
            consensus(z) + rng.normal(0, s, n) if s else consensus(z),
            ratings(z, raters, rng),
            names,
            epsilon=eps,
        )
        hits += bool(res.replace)
    return hits / replicates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--sizes", default="50,100,200")
    ap.add_argument("--raters", default="3,5")
    ap.add_argument("--epsilon", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    for raters in (int(x) for x in args.raters.split(",")):
        s = noise_for(args.epsilon, raters)
        print(
            f"R = {raters}: metric noise SD {s:.3f} makes it exactly eps = {args.epsilon:g} worse "
            f"(population gap {gap(s, raters, 1):.4f} on fresh draws)"
        )
        for n in sizes:
            for label, sd in (("null (eps worse)", s), ("power (= consensus)", 0.0)):
                p = replace_rate(n, raters, sd, args.epsilon, args.replicates, args.seed + n)
                se = math.sqrt(p * (1 - p) / args.replicates)
                print(f"  n = {n:4d}  {label:20s} replace {100 * p:5.1f} % (MC SE {100 * se:.1f})")


if __name__ == "__main__":
    main()
