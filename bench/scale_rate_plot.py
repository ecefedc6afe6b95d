#!/usr/bin/env python3
"""The picture of bench/scale_rate.sh: the fleet's pushed keys/s (1 s
windows) and the trainers' examples/s (2 s windows) over time, each as a
fraction of its median before the rescale, with the rescale shaded and the
goal's 50% line. Plain SVG, no libraries.

    bench/scale_rate_plot.py JOB_DIR T0 T1 TO > scale_rate.svg

JOB_DIR holds rate.tsv ("unix-seconds keys examples" per 0.2 s); T0 and T1
are the rescale's start and end (unix seconds); TO the fleet size reached.
"""
import statistics
import sys


def main():
    job, t0, t1, to = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    rows = [tuple(map(float, l.split())) for l in open(f"{job}/rate.tsv")
            if len(l.split()) == 3][1:]
    start = rows[0][0]
    end = rows[-1][0] - 1  # the job is stopped at the end
    def window(a, b, col):
        return sum(r[col] for r in rows if a <= r[0] < b) / (b - a)
    def series(col, width):
        steps = [start + 0.2 * i for i in range(int((end - width - start) / 0.2))]
        before = statistics.median(window(t, t + width, col) for t in steps if t + width <= t0)
        return [(t + width / 2, window(t, t + width, col) / before) for t in steps]
    keys, examples = series(1, 1.0), series(2, 2.0)
    W, H, left, right, top, bottom = 820, 320, 56, 20, 36, 44
    ymax = 1.5
    x = lambda t: left + (t - start) / (end - start) * (W - left - right)
    y = lambda f: H - bottom - min(f, ymax) / ymax * (H - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           f'<rect x="{x(t0):.1f}" y="{top}" width="{x(t1) - x(t0):.1f}" '
           f'height="{H - top - bottom}" fill="#fde9c8"/>',
           f'<text x="{x(t0) + 4:.1f}" y="{top + 14}">sampan scale 2 -> {to}: '
           f'{t1 - t0:.1f} s</text>']
    for f in (0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5):  # y ticks
        style = 'stroke="#c00" stroke-dasharray="4 3"' if f == 0.5 else 'stroke="#ddd"'
        out.append(f'<line x1="{left - 4}" y1="{y(f):.1f}" x2="{W - right}" '
                   f'y2="{y(f):.1f}" {style}/>')
        out.append(f'<text x="{left - 8}" y="{y(f) + 4:.1f}" text-anchor="end">{f:.0%}</text>')
    for s in range(0, int(end - start) + 1, 5):  # x ticks
        out.append(f'<line x1="{x(start + s):.1f}" y1="{H - bottom}" x2="{x(start + s):.1f}" '
                   f'y2="{H - bottom + 4}" stroke="#000"/>')
        out.append(f'<text x="{x(start + s):.1f}" y="{H - bottom + 17}" '
                   f'text-anchor="middle">{s} s</text>')
    for pts, color, name in ((keys, "#1f5fa8", "pushed keys/s (1 s windows)"),
                             (examples, "#2a9d3a", "examples/s (2 s windows)")):
        line = " ".join(f"{x(t):.1f},{y(f):.1f}" for t, f in pts)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{line}"/>')
    lx = W - right - 230
    for i, (color, name) in enumerate((("#1f5fa8", "pushed keys/s (1 s windows)"),
                                       ("#2a9d3a", "examples/s (2 s windows)"),
                                       ("#c00", "the goal's floor: 50%"))):
        yy = top + 14 + 16 * i
        out.append(f'<line x1="{lx}" y1="{yy - 4}" x2="{lx + 22}" y2="{yy - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 28}" y="{yy}">{name}</text>')
    out += [f'<line x1="{left}" y1="{H - bottom}" x2="{W - right}" y2="{H - bottom}" stroke="#000"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{H - bottom}" stroke="#000"/>',
            f'<text x="{(left + W - right) / 2}" y="{H - 8}" text-anchor="middle">'
            'seconds since the job started training</text>',
            f'<text x="{left}" y="{top - 14}">rate as a fraction of its median before the rescale</text>',
            '</svg>']
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
