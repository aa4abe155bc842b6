"""Summary statistics of a list of numbers: {"numbers": [1, 2, 3, 4]}."""
import statistics

from fmt import rounded


def handle(event):
    xs = [float(x) for x in event.get("numbers", [])]
    if not xs:
        raise ValueError("numbers is empty")
    return rounded({
        "count": len(xs),
        "sum": sum(xs),
        "mean": statistics.fmean(xs),
        "median": statistics.median(xs),
        "stdev": statistics.pstdev(xs),
        "min": min(xs),
        "max": max(xs),
    })
