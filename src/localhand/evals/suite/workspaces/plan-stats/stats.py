"""python3 stats.py DATA.csv OUT.txt: min, max and mean of one column of DATA.csv.

The column is set in stats.json; `python3 stats.py --init` writes the default one."""

import csv
import json
import os
import sys

CONFIG = "stats.json"


def main(argv):
    if argv[:1] == ["--init"]:
        with open(CONFIG, "w", encoding="utf-8") as handle:
            json.dump({"column": "temp"}, handle)
        print(f"wrote {CONFIG}")
        return 0
    if not os.path.exists(CONFIG):
        print(f"{CONFIG} is missing: run `python3 stats.py --init` to create it", file=sys.stderr)
        return 2
    with open(CONFIG, encoding="utf-8") as handle:
        column = json.load(handle)["column"]
    source, target = argv[:2]
    with open(source, encoding="utf-8") as handle:
        values = [float(row[column]) for row in csv.DictReader(handle)]
    with open(target, "w", encoding="utf-8") as handle:
        mean = sum(values) / len(values)
        handle.write(f"min {min(values):g}, max {max(values):g}, mean {mean:.1f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
