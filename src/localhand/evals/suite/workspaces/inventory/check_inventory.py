"""Checks the inventory and its quantities."""

import sys

from inventory import Inventory
from utils import parse_quantity

try:
    stock = Inventory()
    stock.add("Widget ", "1,200")
    stock.add(" widget", "30")
    count = stock.count("WIDGET")
    big, small = parse_quantity("1,000,000"), parse_quantity(" 7 ")
except ValueError as exc:
    sys.exit(f"quantities still fail to parse: {exc}")
if (count, big, small) != (1230, 1000000, 7):
    sys.exit(f"got {(count, big, small)}; expected (1230, 1000000, 7)")
print("the inventory adds up")
