"""python3 build_report.py DATA.csv REPORT.txt: how many students, and their mean score."""

import csv
import sys


def main(source, target):
    with open(source, encoding="utf-8") as handle:
        scores = [int(row["score"]) for row in csv.DictReader(handle)]
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(f"{len(scores)} students, mean {sum(scores) / len(scores):.1f}\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
