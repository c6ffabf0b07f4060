"""Stock levels."""

from utils import normalize_name, parse_quantity


class Inventory:
    def __init__(self):
        self._stock = {}

    def add(self, name, quantity_text):
        key = normalize_name(name)
        self._stock[key] = self._stock.get(key, 0) + parse_quantity(quantity_text)

    def count(self, name):
        return self._stock.get(normalize_name(name), 0)
