"""Coverage of the held-out MAE and RMSE intervals of services/stats/calibration.py (jackknife-t by question).

Simulated studies on tied 1-5 ratings (STATS.md section 2): latent z ~ N(0, 1); R = 3 raters rate
cut(z + N(0, 0.6^2)) at -1, -0.3, 0.4, 1.1; the reference H is their mean; the metric is a 0-1 score
clip((e^{0.8 zm} - e^{0.8 q20}) / (e^{0.8 q90} - e^{0.8 q20}), 0, 1) rounded to 0.01 with
zm = rho z + sqrt(1 - rho^2) e (rho = 0.7).

Truth: the error the cross-fitted maps make on new items: each of 100,000 fresh items goes through the map of
a random fold (the five maps fitted in the study), against its own fresh H. The interval holds the maps fixed,
so this is what it estimates. Prints coverage with its Monte Carlo SE (target 93.5-96.5 %).

Usage: python bench/calibration.py [--replicates 300] [--sizes 50,100,200]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from sklearn.isotonic import IsotonicRegression

from services.stats import calibrate

CUTS = np.array([-1.0, -0.3, 0.4, 1.1])


def draw(n: int, rng: np.random.Generator, rho: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    z = rng.normal(size=n)
    r = 1.0 + ((z[:, None, None] + rng.normal(0, 0.6, (n, 3, 1))) > CUTS).sum(axis=2)
    zm = rho * z + math.sqrt(1 - rho**2) * rng.normal(size=n)
    q20, q90 = np.quantile(rng.normal(size=200_000), [0.2, 0.9])
    m = np.round(
        np.clip((np.exp(0.8 * zm) - np.exp(0.8 * q20)) / (np.exp(0.8 * q90) - np.exp(0.8 * q20)), 0, 1), 2
    )
    return m, r.mean(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--sizes", default="50,100,200")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    fresh_m, fresh_h = draw(100_000, rng)
    for n in (int(x) for x in args.sizes.split(",")):
        cover = {"mae": 0, "rmse": 0}
        done = 0
        for _ in range(args.replicates):
            m, h = draw(n, rng)
            qs = [f"q{i}" for i in range(n)]
            res = calibrate(m, h, qs, (1, 5))
            if res.undefined_reason is not None or res.mae.interval is None or res.mae.interval.low is None:
                continue
            fold = np.array([res.fold_of_question[q] for q in qs])
            pick = rng.integers(0, res.folds, fresh_m.size)
            pred = np.empty(fresh_m.size)
            for f in range(res.folds):
                iso = IsotonicRegression(y_min=1, y_max=5, out_of_bounds="clip").fit(
                    m[fold != f], h[fold != f]
                )
                pred[pick == f] = iso.predict(fresh_m[pick == f])
            err = pred - fresh_h
            truth = {"mae": float(np.mean(np.abs(err))), "rmse": math.sqrt(float(np.mean(err**2)))}
            for name in cover:
                ci = getattr(res, name).interval
                cover[name] += ci.low <= truth[name] <= ci.high
            done += 1
        for name, hits in cover.items():
            p = hits / done
            se = 100 * math.sqrt(p * (1 - p) / done)
            print(f"n = {n:4d}  {name:4s} coverage {100 * p:5.1f} % (MC SE {se:.1f}, {done} studies)")


if __name__ == "__main__":
    main()
