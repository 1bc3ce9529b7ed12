"""Markdown tables and the bar chart for ``run.py``'s results (no JAX import)."""

from __future__ import annotations

import math
from typing import Any

import bench_configs as configs

MiB = 2**20

MAIN = ("mxopt", "mxopt_agg", "optax")


def f3(x: Any) -> str:
    """A number with about 3 significant digits ('-' for missing)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    x = float(x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def pct(x: Any) -> str:
    return "-" if x is None else f"{x:.0f}%" if x >= 10 else f"{x:.1f}%"


def mib(x: Any) -> str:
    return "-" if x is None else f3(x / MiB)


def ms_iqr(rec: dict | None) -> str:
    if not rec or rec.get("ms") is None:
        return _why(rec)
    return f"{f3(rec['ms'])} [{f3(rec.get('ms_q1'))}–{f3(rec.get('ms_q3'))}]"


def _why(rec: dict | None) -> str:
    if not rec:
        return "-"
    err = rec.get("setup", {}).get("error", "")
    if err.startswith("skipped: same program"):
        return "= mxopt (n/a)"
    if err.startswith("skipped"):
        return "skipped"
    return "error" if err else "-"


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _groups(results: dict, workload: str) -> list[dict]:
    return [g for g in results["groups"] if g["workload"] == workload]


def _first(rec: dict | None) -> str:
    return "-" if not rec else f3(rec.get("setup", {}).get("first_call_s"))


def markdown(results: dict) -> str:
    m = results["machine"]
    bw = results["bandwidth"]
    lines = [
        "# mxopt_jax optimizer-step benchmark",
        "",
        f"* Date: {m['date_utc']}; total run time {f3(m.get('total_s'))} s.",
        f"* Machine: {m['cpu']}, {m['logical_cpus']} logical CPUs ({m['usable_cpus']} usable), "
        f"{f3(m.get('ram_gib'))} GiB RAM, last-level cache {m.get('l3', '?')}; JAX device {m['device']}.",
        f"* Load average at start {', '.join(f'{x:.2f}' for x in m['load_avg_start'])}; at end "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_avg_end', ()))} (a busy machine makes every number slower).",
        f"* Software: Python {m['python']}, jax {m['jax']}, jaxlib {m['jaxlib']}, optax {m['optax']}, "
        f"numpy {m['numpy']}, mxopt_jax {m['mxopt_jax']} (git {m['git']}).",
    ]
    for name, hello in results.get("side", {}).items():
        lines.append(f"* Side library {name}: {', '.join(f'{k} {v}' for k, v in hello.items())}.")
    lines += [
        f"* Command: `{m['command']}`",
        "* What limits each figure, and what it would take: [ANALYSIS.md](ANALYSIS.md).",
        "",
        "## Method",
        "",
        "* A step is `params, state = step(params, state, grads)` with `step = jax.jit(..., donate_argnums=(0, 1))`"
        " (`tx.update` + `optax.apply_updates`); gradients are fixed and reused; float32 everywhere.",
        "* Per (workload, optimizer) group every contender is built, its **first call** is timed (trace + compile +"
        " first step, synchronised), it is warmed up, and `k` is chosen so that one sample (k back-to-back steps,"
        " then `jax.block_until_ready`) lasts about the target sample time. Samples are then taken round-robin"
        " over the group's contenders, the starting contender rotating each round. Reported: median ms/step"
        " [interquartile range]; ratios are the median over rounds of the ratio measured within a round.",
        "* **Roofline**: bytes a step must move = read g + read and write w + read and write every state array"
        " (sizes taken from `tx.init(params)`: fp32 SGD 12 B/param, SGD-momentum 20, Adam 28), divided by the"
        " reference bandwidth below. `% RL` = that limit ÷ measured time. LARS/LAMB/LANS need norms before"
        " the weight can be written, so a single pass (the model) is not reachable for them. Working sets that"
        " fit in the last-level cache (C; partly A and B where the L3 is large) can exceed 100 %.",
        f"* **Memory**: {m['memory_method']}. *setup peak* covers state init + first call (compilation"
        " included); *step peak* is the largest growth during one timed sample (ideally 0: donated buffers are"
        " reused; a non-zero value means a per-step temporary). Page faults are minor faults per step.",
        "* `mxopt_agg` = the same constructor with `aggregate_num=np.inf`; `= mxopt (n/a)` means it traced to the"
        " same program as the per-leaf transform and was not timed. `mxopt_multi` = the parameters kept as"
        " `mxopt_jax.multi_tensor.FlatParams` (one buffer per dtype) between steps: the multi-tensor path.",
        "",
        "## Memory bandwidth (measured in this run)",
        "",
    ]
    rows = []
    for label, k in bw.get("kernels", {}).items():
        end = results.get("bandwidth_end", {}).get("kernels", {}).get(label, {})
        rows.append(
            [
                label,
                f3(k.get("footprint_mib")),
                f"{f3(k.get('gbps'))} [{f3(k.get('gbps_q1'))}–{f3(k.get('gbps_q3'))}]"
                if "gbps" in k
                else k.get("error", "-"),
                f3(end.get("gbps")),
                f3(k.get("faults")),
            ]
        )
    lines.append(
        table(
            [
                "kernel (jitted, output donated)",
                "footprint MiB",
                "GB/s [IQR]",
                "GB/s at end of run",
                "faults/call",
            ],
            rows,
        )
    )
    lines += [
        "",
        "`scale`: a = s·b (8 B/element), `triad`: a = b + s·c (12 B), `axpy`: a = a + s·b in place (12 B, the"
        " optimizer pattern); write-allocate traffic not counted (as STREAM). "
        "**Reference bandwidth (the best median, at the start or the end of the run): "
        f"{f3(results.get('reference_gbps', bw.get('reference_gbps')))} GB/s.**",
        "",
    ]

    for wname in ("A", "B", "C"):
        groups = _groups(results, wname)
        if not groups:
            continue
        lines += [f"## Workload {wname}", ""]
        desc = groups[0].get("description")
        if desc:
            lines += [desc, ""]
        speed, cost = [], []
        for g in groups:
            r = g["results"]
            mx, agg, ox = (r.get(k) for k in MAIN)
            bpp = mx["setup"].get("bytes_per_param") if mx else None
            speed.append(
                [
                    g["optimizer"],
                    f3(bpp),
                    f3(mx.get("limit_ms")) if mx else "-",
                    ms_iqr(mx),
                    pct(mx.get("pct_roofline")) if mx else "-",
                    ms_iqr(agg) if agg else "-",
                    pct(agg.get("pct_roofline")) if agg else "-",
                    ms_iqr(ox) if ox else "-",
                    pct(ox.get("pct_roofline")) if ox else "-",
                    f3(mx.get("vs_optax")) if mx else "-",
                    f3(agg.get("vs_optax")) if agg else "-",
                ]
            )
            cost.append(
                [
                    g["optimizer"],
                    " / ".join(_first(x) for x in (mx, agg, ox)),
                    " / ".join(
                        mib(x.get("setup", {}).get("setup_peak_bytes")) if x else "-" for x in (mx, agg, ox)
                    ),
                    " / ".join(mib(x.get("peak")) if x else "-" for x in (mx, agg, ox)),
                    " / ".join(f3(x.get("faults")) if x else "-" for x in (mx, agg, ox)),
                    str(g["rounds"]),
                ]
            )
        lines.append(
            table(
                [
                    "optimizer",
                    "B/param",
                    "limit ms",
                    "mxopt ms [IQR]",
                    "% RL",
                    "mxopt agg ms",
                    "% RL",
                    "optax ms",
                    "% RL",
                    "mxopt/optax",
                    "agg/optax",
                ],
                speed,
            )
        )
        lines += ["", f"Cost on {wname} (each cell: mxopt / mxopt_agg / optax):", ""]
        lines.append(
            table(
                ["optimizer", "first call s", "setup peak MiB", "step peak MiB", "faults/step", "rounds"],
                cost,
            )
        )
        lines.append("")

    # peers: everything that is not one of the three main contenders (A-C)
    rows = []
    for g in results["groups"]:
        if g["workload"] == "D":
            continue
        for label, rec in g["results"].items():
            if label in MAIN:
                continue
            rows.append(
                [
                    g["workload"],
                    g["optimizer"],
                    label,
                    ms_iqr(rec),
                    pct(rec.get("pct_roofline")),
                    f3(rec.get("vs_optax")),
                    f3(rec.get("vs_mxopt")),
                    _first(rec),
                    mib(rec.get("peak")),
                    str(rec.get("setup", {}).get("error") or rec.get("setup", {}).get("note", "")),
                ]
            )
    if rows:
        lines += [
            "## Facade, flat reference and other libraries (same groups, same rounds)",
            "",
            table(
                [
                    "wl",
                    "opt",
                    "contender",
                    "ms [IQR]",
                    "% RL",
                    "vs optax",
                    "vs mxopt",
                    "first call s",
                    "step peak MiB",
                    "note",
                ],
                rows,
            ),
            "",
            "`mxopt_flat`: the per-leaf transform on one concatenated vector (what `aggregate_num` should reach)."
            " `facade_loop`: `for i: w[i] = upd(i, g[i], w[i])`; `facade_list`: `upd(list(range(n)), gs, ws)`"
            " with the class default `aggregate_num`; `facade_list_mx`: the same with the `aggregate_num` the MXNet"
            " side gets (`MXNET_OPTIMIZER_AGGREGATION_SIZE`, 45); `facade_list_agg`: with `aggregate_num=np.inf`."
            " Side libraries run in their own processes, one sample of each of their contenders per round"
            " slot, interleaved with the JAX contenders.",
            "",
        ]

    dgroups = _groups(results, "D")
    if dgroups:
        lines += ["## Workload D: lazy row-sparse update vs dense", ""]
        desc = dgroups[0].get("description")
        if desc:
            lines += [desc, ""]
        rows, heads = [], []
        for g in dgroups:
            r = g["results"]
            for label, rec in r.items():
                s = rec.get("setup", {})
                rows.append(
                    [
                        g["optimizer"],
                        label,
                        f3(s.get("bytes", 0) / 1e6) if s.get("bytes") else "-",
                        f3(rec.get("limit_ms")),
                        ms_iqr(rec),
                        pct(rec.get("pct_roofline")),
                        f3(rec.get("vs_mxopt_dense")),
                        f3(rec.get("vs_optax")),
                        _first(rec),
                        s.get("note", "") or s.get("error", ""),
                    ]
                )
            ml = r.get("mxopt_lazy", {})
            lazy = ml.get("vs_mxopt_dense")
            heads.append(
                f"* {g['optimizer']}: mxopt_jax lazy / dense = **{f3(lazy)}**"
                + (f" (1/{1 / lazy:.0f})" if lazy else "")
                + " — target ≤ 0.05 (1/20)"
                + ("" if lazy is None else (" ✔" if lazy <= 0.05 else " ✘"))
                + (
                    f"; lazy vs MXNet 1.9.1 lazy: {f3(ml['vs_mx_lazy_updater'])}"
                    if ml.get("vs_mx_lazy_updater")
                    else ""
                )
                + (
                    f"; vs the hand-written JAX reference: {f3(ml['vs_jax_lazy_ref'])}"
                    if ml.get("vs_jax_lazy_ref")
                    else ""
                )
            )
        lines += heads + [""]
        lines.append(
            table(
                [
                    "opt",
                    "contender",
                    "MB/step",
                    "limit ms",
                    "ms [IQR]",
                    "% RL",
                    "vs mxopt_dense",
                    "vs optax_dense",
                    "first call s",
                    "note",
                ],
                rows,
            )
        )
        lines += [
            "",
            "Lazy traffic model: only the touched rows of w and state are read and written, plus the sparse"
            " gradient (values + int32 indices).",
            "",
        ]

    problems = []
    for g in results["groups"]:
        for label, rec in g["results"].items():
            err = rec.get("setup", {}).get("error")
            if err and not err.startswith("skipped: same program"):
                problems.append(f"* {g['workload']}/{g['optimizer']}/{label}: {err}")
    if problems:
        lines += ["## Skipped and failed contenders", "", *problems, ""]

    used = {g["optimizer"] for g in results["groups"]}
    notes = [f"* **{c.key}**: {c.note}" for c in configs.CONFIGS if c.key in used and c.note]
    if notes:
        lines += [
            "## Hyperparameters and optax counterparts",
            "",
            "mxopt_jax runs MXNet's defaults except the arguments listed in `benchmarks/bench_configs.py`; the optax"
            " side gets equivalent values.",
            "",
            *notes,
            "",
        ]
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    """Bar chart: % of roofline per optimizer, one panel per workload A-C (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wls = [w for w in ("A", "B", "C") if _groups(results, w)]
    if not wls:
        return
    fig, axes = plt.subplots(len(wls), 1, figsize=(14, 3.6 * len(wls)), squeeze=False)
    colors = {"mxopt": "#1f77b4", "mxopt_agg": "#2ca02c", "optax": "#ff7f0e"}
    for ax, w in zip(axes[:, 0], wls, strict=True):
        groups = _groups(results, w)
        names = [g["optimizer"] for g in groups]
        width = 0.27
        for j, label in enumerate(MAIN):
            xs, ys = [], []
            for i, g in enumerate(groups):
                v = g["results"].get(label, {}).get("pct_roofline")
                if v:
                    xs.append(i + (j - 1) * width)
                    ys.append(v)
            if ys:
                ax.bar(xs, ys, width, label=label, color=colors[label])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_yscale("log")
        ax.axhline(100, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("% of roofline")
        ax.set_title(f"Workload {w}: achieved fraction of the bandwidth limit (higher is better)")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
