#!/usr/bin/env python3
"""Plots a soak run: soak_plot.py DIR/soak.csv DIR/soak.png

Four panels over time: RSS and open fds of the server and each worker,
database and WAL size, p50/p99 start-to-close latency. What a good soak
looks like: every line flat once warmed up (the database once it is older
than the retention). Needs Debian's python3-matplotlib.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")  # no display
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: soak_plot.py SOAK.csv OUT.png")
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("soak_plot.py: no samples in " + sys.argv[1])
    t = [float(r["t_s"]) / 60 for r in rows]

    def col(name, scale=1.0):
        return [float(r[name]) * scale for r in rows]

    fig, ax = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    kib = 1 / 1024
    a = ax[0][0]
    a.plot(t, col("server_rss_kib", kib), label="server")
    a.plot(t, col("worker1_rss_kib", kib), label="worker 1")
    a.plot(t, col("worker2_rss_kib", kib), label="worker 2")
    a.set_title("RSS (MiB)")
    a.set_ylim(bottom=0)
    a.legend()
    a = ax[0][1]
    a.plot(t, col("server_fds"), label="server")
    a.plot(t, col("worker1_fds"), label="worker 1")
    a.plot(t, col("worker2_fds"), label="worker 2")
    a.set_title("open file descriptors")
    a.set_ylim(bottom=0)
    a.legend()
    a = ax[1][0]
    mib = 1 / (1024 * 1024)
    db, wal = col("db_bytes", mib), col("wal_bytes", mib)
    a.plot(t, db, label="database")
    a.plot(t, wal, label="WAL")
    a.plot(t, [x + y for x, y in zip(db, wal)], label="database + WAL", linestyle="--")
    a.set_title("SQLite files (MiB)")
    a.set_ylim(bottom=0)
    a.legend()
    a = ax[1][1]
    # The first row (t=0) and the drain row (the last starts finishing) have
    # no full interval of work behind their latencies.
    loaded = [i for i, r in enumerate(rows) if int(r["done_interval"]) > 0 and r["drain"] != "1"]
    a.plot([t[i] for i in loaded], [col("p99_ms")[i] for i in loaded], label="p99", marker=".")
    a.plot([t[i] for i in loaded], [col("p50_ms")[i] for i in loaded], label="p50", marker=".")
    a.set_title("start-to-close latency per interval (ms)")
    a.set_ylim(bottom=0)
    a.legend()
    for a in ax[1]:
        a.set_xlabel("minutes")
    for row in ax:
        for a in row:
            a.grid(alpha=0.3)
    last = rows[-1]
    fig.suptitle(
        "soak: %s workflows completed, %s failed or lost, %s runs deleted by retention"
        % (last["completed"], last["failed"], last["retention_deleted"])
    )
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)
    print("soak: plot in " + sys.argv[2])


if __name__ == "__main__":
    main()
