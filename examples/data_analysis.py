# A data-analysis job with the standard library only (csv, statistics).
# Without input it generates a reproducible sample; with a CSV given by
# --in (copied read-only to /in/<name>) it summarises every numeric column:
#   cordon run < examples/data_analysis.py
#   cordon run --in sales.csv < examples/data_analysis.py
# From an agent over MCP, pass the file in run_code's "files" argument:
#   {"code": "<this file>", "files": [{"path": "sales.csv", "content": "..."}]}
# It prints one JSON summary on stdout (the result's "stdout" field).
import csv
import glob
import io
import json
import random
import statistics


def sample_csv(rows=500, seed=7):
    """A CSV of fake daily sales for three regions."""
    rnd = random.Random(seed)
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["day", "region", "units", "price"])
    for day in range(rows):
        region = rnd.choice(["north", "south", "west"])
        units = max(0, int(rnd.gauss(40 if region == "west" else 30, 8)))
        w.writerow([day, region, units, round(rnd.uniform(9.5, 12.5), 2)])
    return out.getvalue(), "generated sample (%d rows)" % rows


def load():
    files = sorted(glob.glob("/in/**/*.csv", recursive=True))
    if not files:
        return sample_csv()
    with open(files[0], newline="", encoding="utf-8", errors="replace") as f:
        return f.read(), files[0]


def numeric(values):
    out = []
    for v in values:
        try:
            out.append(float(v))
        except ValueError:
            return None  # not a numeric column
    return out


def summarise(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    summary = {}
    for col in (rows[0].keys() if rows else []):
        nums = numeric([r[col] for r in rows if r[col] not in ("", None)])
        if not nums:
            continue
        summary[col] = {
            "count": len(nums),
            "mean": round(statistics.fmean(nums), 3),
            "median": statistics.median(nums),
            "stdev": round(statistics.stdev(nums), 3) if len(nums) > 1 else 0,
            "min": min(nums),
            "max": max(nums),
        }
    groups = {}
    if rows and "region" in rows[0] and "units" in rows[0]:
        for r in rows:
            groups.setdefault(r["region"], []).append(float(r["units"]))
        groups = {k: round(statistics.fmean(v), 2)
                  for k, v in sorted(groups.items())}
    return len(rows), summary, groups


text, source = load()
n, summary, by_region = summarise(text)
print(json.dumps({"source": source, "rows": n, "columns": summary,
                  "mean_units_by_region": by_region}, indent=1))
