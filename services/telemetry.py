"""Operational metrics in the Prometheus text exposition format (version 0.0.4), without a client library.

``Telemetry`` holds the process's counters and histograms (thread-safe: requests finish on the event loop,
reports and jobs in threads) and renders them with the gauges read at scrape time (``Gauge`` callbacks: the
database pool, the job queue, the judge gateway). One object per app, owned by its resources: no module
state, so two apps in one process (the tests) count apart.

Failure modes: a gauge callback that raises is left out of that scrape and counted in
``ragmeta_scrape_errors_total`` (a scrape never fails because the store is busy).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

log = logging.getLogger("ragmeta.telemetry")

# Seconds: from a cached /healthz to a report computed under load.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
Labels = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass
class Counter:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    values: dict[Labels, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def inc(self, *label_values: str, amount: float = 1.0) -> None:
        with self.lock:
            self.values[label_values] = self.values.get(label_values, 0.0) + amount

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self.lock:
            for key, value in sorted(self.values.items()):
                lines.append(f"{self.name}{_labels(self.labels, key)} {_number(value)}")
        return lines


@dataclass
class Histogram:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = LATENCY_BUCKETS
    # Per label set: the count in each bucket (not cumulative), the sum and the count.
    series: dict[Labels, tuple[list[int], list[float]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, value: float, *label_values: str) -> None:
        with self.lock:
            counts, total = self.series.setdefault(label_values, ([0] * (len(self.buckets) + 1), [0.0]))
            index = next((i for i, bound in enumerate(self.buckets) if value <= bound), len(self.buckets))
            counts[index] += 1
            total[0] += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self.lock:
            for key, (counts, total) in sorted(self.series.items()):
                running = 0
                for bound, n in zip((*self.buckets, math.inf), counts, strict=True):
                    running += n
                    le = f'le="{_number(bound)}"'
                    lines.append(f"{self.name}_bucket{_labels(self.labels, key, le)} {running}")
                lines.append(f"{self.name}_sum{_labels(self.labels, key)} {_number(total[0])}")
                lines.append(f"{self.name}_count{_labels(self.labels, key)} {running}")
        return lines


@dataclass(frozen=True)
class Gauge:
    """A family read when scraped: ``read()`` gives (label values, value) pairs. ``kind`` is ``gauge`` or,
    for totals kept elsewhere (the judge gateway's, the store's), ``counter``."""

    name: str
    help: str
    read: Callable[[], Iterable[tuple[Labels, float]]]
    labels: tuple[str, ...] = ()
    kind: str = "gauge"

    def render(self) -> list[str]:
        values = sorted(self.read())
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        lines += [f"{self.name}{_labels(self.labels, key)} {_number(value)}" for key, value in values]
        return lines


@contextmanager
def timed(histogram: Histogram, *label_values: str) -> Iterator[None]:
    """Observe the time the block took (whether it returned or raised)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.observe(time.perf_counter() - started, *label_values)


class Telemetry:
    """The metric families of one app process."""

    def __init__(self) -> None:
        self.requests = Counter(
            "ragmeta_http_requests_total",
            "HTTP requests answered, by method, route template and status code",
            ("method", "route", "status"),
        )
        self.latency = Histogram(
            "ragmeta_http_request_duration_seconds",
            "Time to answer an HTTP request (until its last body byte was sent), by route template",
            ("method", "route"),
        )
        self.report_seconds = Histogram(
            "ragmeta_report_compute_seconds",
            "Time to compute a report or report section not found in the cache (in a report process or a "
            "thread), by what was computed",
            ("kind",),
        )
        self.scrape_errors = Counter(
            "ragmeta_scrape_errors_total", "Metric families left out of a scrape because reading them failed"
        )

    def render(self, gauges: Sequence[Gauge] = ()) -> str:
        """Every family: the counters and histograms kept here, then ``gauges`` read now."""
        lines: list[str] = []
        for family in (self.requests, self.latency, self.report_seconds):
            lines += family.render()
        for gauge in gauges:
            try:
                lines += gauge.render()
            except Exception:
                log.warning("metric family %s not read for this scrape", gauge.name, exc_info=True)
                self.scrape_errors.inc()
        lines += self.scrape_errors.render()
        return "\n".join(lines) + "\n"
